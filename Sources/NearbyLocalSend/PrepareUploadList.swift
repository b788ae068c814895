import Foundation

/// A `prepare-upload` body read as it arrives, never held whole: the official app sends a whole
/// folder in one request (`{"info": {…}, "files": {"ID": {…}, …}}`), so the `files` map is walked
/// entry by entry, each entry held only until it is decoded (at most `entryBytes`), every other
/// value at most `fieldBytes`, at most `maxFiles` entries, `bodyBytes` in all, nested no deeper
/// than `LocalSendLimits.jsonDepth`. What each entry costs is the caller's to charge (`feed`
/// returns the entries a chunk completed). A pure machine over bytes: tested without sockets.
package struct PrepareUploadList: Sendable {
    package struct Limits: Sendable, Equatable {
        /// Files one request may offer (`NEARBY_LOCALSEND_FILES`, 10,000).
        package var maxFiles = 10_000
        /// The whole body (`NEARBY_LOCALSEND_LIST_BYTES`, 4 MiB: 10,000 of the official app's
        /// entries, about 300 bytes each, fit).
        package var bodyBytes = 4 << 20
        /// One entry of `files`, its key included: a name of 32 parts of 255 bytes fits, escaped.
        package var entryBytes = 16 << 10
        /// The first entry when it is a text message (one `text/*` file whose `preview` is the
        /// text, as the official app sends a message of any length): 1 MiB and the rest of an
        /// entry, as JSON carries it. Held once, while it is decoded.
        package var textBytes = (1 << 20) + (16 << 10)
        /// Any other value (`info`, or a field we do not know).
        package var fieldBytes = 64 << 10

        package init() {}

        package static func from(environment: [String: String]) -> Limits {
            var limits = Limits()
            func number(_ name: String) -> Int? { environment[name].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil } }
            if let files = number("NEARBY_LOCALSEND_FILES") { limits.maxFiles = files }
            if let bytes = number("NEARBY_LOCALSEND_LIST_BYTES") { limits.bodyBytes = bytes }
            return limits
        }
    }

    /// One file offered, as the official app writes it (`FileDto`).
    package struct File: Decodable, Sendable, Equatable {
        package var id: String?
        package var fileName: String
        package var size: UInt64
        package var fileType: String?
        package var sha256: String?
        package var preview: String?
        /// The file's dates (`{modified, accessed}`); anything else there is ignored, not refused.
        package var metadata: Lenient?

        /// A `metadata` value read leniently: a date that does not read is ignored, never an error.
        package struct Lenient: Decodable, Sendable, Equatable {
            package var dates: LocalSendFileDates?
            package init(from decoder: any Decoder) { dates = try? LocalSendFileDates(from: decoder) }
            package init(_ dates: LocalSendFileDates?) { self.dates = dates }
        }
    }

    /// An entry of `files`: its key (the ID uploads name) and the file.
    package struct Entry: Sendable, Equatable {
        package var key: String
        package var file: File
    }

    /// Why a body is refused: `tooLarge` ones are 413, the others 400.
    package enum Failure: Error, Sendable, Equatable {
        case tooManyFiles(limit: Int)
        case tooLarge(String)
        case malformed(String)

        package var sentence: String {
            switch self {
            case let .tooManyFiles(limit): "this node takes at most \(limit) files in one transfer; this one offers more"
            case let .tooLarge(what), let .malformed(what): what
            }
        }
        package var status: Int {
            if case .malformed = self { return 400 }
            return 413
        }
    }

    let limits: Limits
    /// Bytes fed so far.
    package private(set) var bytes = 0
    /// Entries read so far.
    package private(set) var count = 0
    /// The `info` value's bytes, once read.
    package private(set) var info: [UInt8]?
    private var keys: Set<String> = []

    /// Where the walk is: in the top object (`files` false) or in the `files` map.
    private enum Phase: Sendable { case open, key, inKey, colon, value, comma, done }
    private var phase = Phase.open
    private var inFiles = false
    private var sawFiles = false
    /// The key being read, with its quotes (nil past its bound: a key we do not know).
    private var key: [UInt8]? = []
    private var escaped = false
    /// The value being read: nil when none.
    private var value: Value?

    private struct Value: Sendable {
        /// Its bytes, when kept (`info`, an entry); nil when skipped.
        var kept: [UInt8]?
        var limit: Int
        var what: String
        var length = 0
        var nesting = 0
        var inString = false
        var escaped = false
        var scalar = false
        var started = false
    }

    package init(limits: Limits = Limits()) { self.limits = limits }

    private static let filesKey = Array(#""files""#.utf8)
    private static let infoKey = Array(#""info""#.utf8)

    /// Reads `chunk`; the entries it completed, in order.
    package mutating func feed(_ chunk: some Collection<UInt8>) throws(Failure) -> [Entry] {
        bytes += chunk.count
        guard bytes <= limits.bodyBytes else {
            throw .tooLarge("this node takes a file list of at most \(limits.bodyBytes) bytes; this one is larger")
        }
        var done: [Entry] = []
        for byte in chunk {
            if let entry = try step(byte) { done.append(entry) }
        }
        return done
    }

    /// The body ended: the `info` bytes, once the body was a whole object with a `files` map.
    package func finish() throws(Failure) -> [UInt8] {
        guard phase == .done else { throw .malformed("the body ended before its JSON did") }
        guard sawFiles, count > 0 else { throw .malformed("not a prepare-upload body: no files") }
        guard let info else { throw .malformed("not a prepare-upload body: no info") }
        return info
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    private mutating func step(_ byte: UInt8) throws(Failure) -> Entry? {
        if value != nil { return try valueStep(byte) }
        if Self.isSpace(byte), phase != .inKey { return nil }
        switch phase {
        case .open:
            guard byte == UInt8(ascii: "{") else { throw .malformed("not a JSON object") }
            phase = .key
        case .key:
            if byte == UInt8(ascii: "}") {
                close()
            } else if byte == UInt8(ascii: "\"") {
                key = [byte]
                escaped = false
                phase = .inKey
            } else {
                throw .malformed("a key was expected")
            }
        case .inKey:
            let limit = inFiles ? limits.entryBytes : 64
            if key != nil, (key?.count ?? 0) < limit { key?.append(byte) } else if inFiles {
                throw .tooLarge("a file's ID is longer than \(limit) bytes")
            } else {
                key = nil
            }
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                phase = .colon
            }
        case .colon:
            guard byte == UInt8(ascii: ":") else { throw .malformed("a ':' was expected") }
            phase = .value
        case .value:
            if !inFiles, key == Self.filesKey {
                guard byte == UInt8(ascii: "{") else { throw .malformed("files is not an object") }
                guard !sawFiles else { throw .malformed("files given twice") }
                sawFiles = true
                inFiles = true
                phase = .key
                return nil
            }
            if inFiles {
                value = count == 0
                    ? Value(kept: [], limit: max(limits.entryBytes, limits.textBytes), what: "a text message (the first file's entry)")
                    : Value(kept: [], limit: limits.entryBytes, what: "one file's entry")
            } else if key == Self.infoKey {
                value = Value(kept: [], limit: limits.fieldBytes, what: "info")
            } else {
                value = Value(kept: nil, limit: limits.fieldBytes, what: "a field")
            }
            return try valueStep(byte)
        case .comma:
            if byte == UInt8(ascii: ",") {
                phase = .key
            } else if byte == UInt8(ascii: "}") {
                close()
            } else {
                throw .malformed("a ',' or '}' was expected")
            }
        case .done:
            throw .malformed("more after the JSON object")
        }
        return nil
    }

    private mutating func close() {
        if inFiles {
            inFiles = false
            phase = .comma
        } else {
            phase = .done
        }
    }

    /// One byte of a value; the entry it completed, if any.
    private mutating func valueStep(_ byte: UInt8) throws(Failure) -> Entry? {
        guard var current = value else { return nil }
        // Taken out while it changes: a copy left in `value` would make each byte's append copy
        // the whole value kept so far (a 1 MiB text took minutes).
        value = nil
        if !current.started {
            current.started = true
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["): current.nesting = 1
            case UInt8(ascii: "\""): current.inString = true
            default: current.scalar = true
            }
            try keep(byte, in: &current)
            value = current
            return nil
        }
        var ended = false
        var again = false
        if current.inString {
            try keep(byte, in: &current)
            if current.escaped {
                current.escaped = false
            } else if byte == UInt8(ascii: "\\") {
                current.escaped = true
            } else if byte == UInt8(ascii: "\"") {
                current.inString = false
                ended = current.nesting == 0
            }
        } else if current.scalar {
            if Self.isSpace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                ended = true
                again = true
            } else {
                try keep(byte, in: &current)
            }
        } else {
            try keep(byte, in: &current)
            switch byte {
            case UInt8(ascii: "\""): current.inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                current.nesting += 1
                // The top object, `files` and the entry itself are levels too.
                guard current.nesting + (inFiles ? 2 : 1) <= LocalSendLimits.jsonDepth else {
                    throw .malformed("JSON nested deeper than \(LocalSendLimits.jsonDepth)")
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                current.nesting -= 1
                ended = current.nesting == 0
            default: break
            }
        }
        guard ended else {
            value = current
            return nil
        }
        value = nil
        phase = .comma
        var entry: Entry?
        if inFiles {
            entry = try decodeEntry(current.kept ?? [])
        } else if key == Self.infoKey {
            info = current.kept
        }
        if again, let next = try step(byte) { return next }
        return entry
    }

    /// Counts the byte against the value's bound, and keeps it when the value is kept.
    private func keep(_ byte: UInt8, in current: inout Value) throws(Failure) {
        guard current.length < current.limit else { throw .tooLarge("\(current.what) is longer than \(current.limit) bytes") }
        current.length += 1
        current.kept?.append(byte)
    }

    private struct Pair: Decodable {
        var k: String
        var v: File
    }

    private mutating func decodeEntry(_ bytes: [UInt8]) throws(Failure) -> Entry {
        guard count < limits.maxFiles else { throw .tooManyFiles(limit: limits.maxFiles) }
        let wrapped = Array(#"{"k":"#.utf8) + (key ?? []) + Array(#","v":"#.utf8) + bytes + [UInt8(ascii: "}")]
        guard let pair = try? JSONDecoder().decode(Pair.self, from: Data(wrapped)) else {
            throw .malformed("a file's entry is not a LocalSend file (id, fileName, size)")
        }
        // Only a text may be longer than an entry: one `text/*` file with a preview.
        if bytes.count > limits.entryBytes, pair.v.preview == nil || pair.v.fileType?.hasPrefix("text/") != true {
            throw .tooLarge("one file's entry is longer than \(limits.entryBytes) bytes")
        }
        guard keys.insert(pair.k).inserted else { throw .malformed("the file ID \(pair.k.prefix(64)) is given twice") }
        count += 1
        return Entry(key: pair.k, file: pair.v)
    }
}
