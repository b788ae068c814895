import NIOCore

/// A strict reader of flat JSON objects, for the file protocol's frame bodies that every small file
/// sends several of (`open`, `openReply`, `start`, `close`, `reset`): Foundation's `JSONDecoder` was
/// 7.5 % of each side's CPU on a folder of small files. It reads the buffer's bytes in place and
/// answers exactly as `JSONDecoder` (swift-foundation's, the one `WireMessage` used) does:
///
/// - the body must be one object; whitespace around tokens; a trailing comma is taken, as
///   `JSONDecoder` takes it;
/// - keys and the values read are checked in full: every escape (`\uXXXX` with surrogate pairs, a
///   lone surrogate refused), no raw control characters, well-formed UTF-8;
/// - the first of duplicate keys wins (`JSONDecoder` keeps the first);
/// - keys it does not read are skipped as `JSONDecoder`'s scanner skips them: their structure
///   checked, nested objects and arrays too, at most 512 levels deep in all (its limit), iteratively
///   (no recursion), their strings and numbers only delimited, not decoded;
/// - a missing required key, `null` for a required value, or a value of another type is malformed.
///
/// What it does not decide it leaves to `JSONDecoder` (`FlatJSONFailure.undecided`): a body not in
/// plain UTF-8 (a byte-order mark, UTF-16), and numbers other than plain non-negative integers
/// (`1.0`, `1e2`, `-0`, overflow), which `JSONDecoder` reads through `Double` and `Decimal` with
/// rules of its own. Peers never send those; answering them the slow way keeps the result exact.
/// Everything it reads is bounded by the payload (at most `Frame.maxBodyPayload` bytes).
enum FlatJSON {
    /// `JSONDecoder`'s limit on nested objects and arrays, the body's own object included.
    static let maxDepth = 512

    /// Decodes `T` from the buffer's readable bytes.
    static func decode<T: FlatJSONDecodable>(_: T.Type, from buffer: ByteBuffer) throws(FlatJSONFailure) -> T {
        let result: Result<T, FlatJSONFailure> = buffer.withUnsafeReadableBytes { bytes in
            do throws(FlatJSONFailure) {
                var scanner = FlatJSONScanner(bytes: bytes)
                let values = try scanner.object(keys: T.flatKeys)
                return .success(try T(flat: FlatJSONFields(bytes: bytes, values: values)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// Why `FlatJSON` gave no value.
enum FlatJSONFailure: Error, Equatable {
    /// `JSONDecoder` would refuse it too.
    case malformed
    /// Outside what it decides: ask `JSONDecoder`.
    case undecided
}

/// A body `FlatJSON` reads: the keys it wants, then a value from the first value of each.
protocol FlatJSONDecodable: Decodable {
    /// ASCII keys, none with `K`, `;` or a backtick (the only ASCII characters another character is
    /// canonically equivalent to, so byte equality is `String` equality, as `JSONDecoder` compares).
    static var flatKeys: [StaticString] { get }
    init(flat: FlatJSONFields) throws(FlatJSONFailure)
}

/// One value's place in the body, delimited by the scanner, decoded only when asked.
enum FlatJSONValue: Equatable {
    case string(Range<Int>, simple: Bool)
    case number(Range<Int>)
    case bool(Bool)
    case null
    case container
}

/// The first value of each wanted key (by the index of `flatKeys`), and the bytes they point into:
/// valid only inside `FlatJSON.decode`.
struct FlatJSONFields {
    let bytes: UnsafeRawBufferPointer
    let values: [FlatJSONValue?]

    func string(_ key: Int) throws(FlatJSONFailure) -> String {
        guard let value = try optionalString(key) else { throw .malformed }
        return value
    }

    func optionalString(_ key: Int) throws(FlatJSONFailure) -> String? {
        switch values[key] {
        case nil, .null?: return nil
        case let .string(range, simple)?: return try FlatJSONString.decode(bytes, range, simple: simple)
        default: throw .malformed
        }
    }

    func bool(_ key: Int) throws(FlatJSONFailure) -> Bool {
        guard let value = try optionalBool(key) else { throw .malformed }
        return value
    }

    func optionalBool(_ key: Int) throws(FlatJSONFailure) -> Bool? {
        switch values[key] {
        case nil, .null?: return nil
        case let .bool(value)?: return value
        default: throw .malformed
        }
    }

    /// `uint64`, or nil when the key is absent or null.
    func optionalUInt64(_ key: Int) throws(FlatJSONFailure) -> UInt64? {
        switch values[key] {
        case nil, .null?: return nil
        default: return try uint64(key)
        }
    }

    /// A plain integer (`0`, or digits without a leading zero) that fits; any other number is
    /// `JSONDecoder`'s to judge.
    func uint64(_ key: Int) throws(FlatJSONFailure) -> UInt64 {
        guard case let .number(range)? = values[key] else { throw .malformed }
        guard range.count <= 20, bytes[range.lowerBound] != UInt8(ascii: "0") || range.count == 1 else { throw .undecided }
        var value: UInt64 = 0
        for index in range {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { throw .undecided }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { throw .undecided }
            value = sum
        }
        return value
    }
}

/// Walks the body as `JSONDecoder`'s scanner does, keeping the first value of each wanted key.
struct FlatJSONScanner {
    let bytes: UnsafeRawBufferPointer
    private var at = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func object(keys: [StaticString]) throws(FlatJSONFailure) -> [FlatJSONValue?] {
        // Plain UTF-8 only: a byte-order mark or a NUL among the first four bytes is how
        // JSONDecoder recognizes other encodings.
        guard let first = bytes.first, first == UInt8(ascii: "{") || Self.isWhitespace(first),
              !bytes.prefix(4).contains(0) else { throw .undecided }
        var values = [FlatJSONValue?](repeating: nil, count: keys.count)
        guard skipWhitespace() == UInt8(ascii: "{") else { throw .malformed }
        at += 1
        var next = try requireNonWhitespace()
        if next == UInt8(ascii: "}") {
            at += 1
        } else {
            while true {
                guard next == UInt8(ascii: "\"") else { throw .malformed }
                let (range, simple) = try string()
                let wanted = try FlatJSONString.index(of: bytes, range, simple: simple, in: keys)
                guard try requireNonWhitespace() == UInt8(ascii: ":") else { throw .malformed }
                at += 1
                let value = try self.value()
                if let wanted, values[wanted] == nil { values[wanted] = value }
                let after = try requireNonWhitespace()
                at += 1
                if after == UInt8(ascii: "}") { break }
                guard after == UInt8(ascii: ",") else { throw .malformed }
                next = try requireNonWhitespace()
                if next == UInt8(ascii: "}") {
                    at += 1
                    break
                }
            }
        }
        guard skipWhitespace() == nil else { throw .malformed }
        return values
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// The next byte that is not whitespace (not consumed), nil at the end.
    private mutating func skipWhitespace() -> UInt8? {
        while at < bytes.count {
            let byte = bytes[at]
            guard Self.isWhitespace(byte) else { return byte }
            at += 1
        }
        return nil
    }

    private mutating func requireNonWhitespace() throws(FlatJSONFailure) -> UInt8 {
        guard let byte = skipWhitespace() else { throw .malformed }
        return byte
    }

    /// A value: scalars delimited, containers skipped whole (their structure checked).
    private mutating func value() throws(FlatJSONFailure) -> FlatJSONValue {
        let byte = try requireNonWhitespace()
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipContainer()
            return .container
        default:
            return try scalar(byte)
        }
    }

    private mutating func scalar(_ byte: UInt8) throws(FlatJSONFailure) -> FlatJSONValue {
        switch byte {
        case UInt8(ascii: "\""):
            let (range, simple) = try string()
            return .string(range, simple: simple)
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // Delimited as JSONDecoder's scanner does; its form is checked only when read.
            let start = at
            at += 1
            while at < bytes.count {
                switch bytes[at] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "-"),
                     UInt8(ascii: "e"), UInt8(ascii: "E"):
                    at += 1
                default:
                    return .number(start..<at)
                }
            }
            return .number(start..<at)
        default:
            throw .malformed
        }
    }

    private mutating func literal(_ word: StaticString) throws(FlatJSONFailure) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - at >= count else { throw .malformed }
        let start = word.utf8Start
        for offset in 0..<count where bytes[at + offset] != start[offset] { throw .malformed }
        at += count
    }

    /// A string's content (between the quotes) and whether it has neither escapes nor control
    /// characters. Escapes are only delimited here: a `\u` needs four bytes, none a quote.
    private mutating func string() throws(FlatJSONFailure) -> (Range<Int>, Bool) {
        at += 1
        let start = at
        var simple = true
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                at += 1
                return (start..<(at - 1), simple)
            }
            if byte == UInt8(ascii: "\\") {
                simple = false
                guard at + 1 < bytes.count else { throw .malformed }
                at += 2
                if bytes[at - 1] == UInt8(ascii: "u") {
                    guard bytes.count - at >= 4 else { throw .malformed }
                    for offset in 0..<4 where bytes[at + offset] == UInt8(ascii: "\"") { throw .malformed }
                    at += 4
                }
                continue
            }
            if byte < 0x20 { simple = false }
            at += 1
        }
        throw .malformed
    }

    /// Skips an object or array and all it holds, without recursion: `open` holds, for each level
    /// entered, whether it is an object.
    private mutating func skipContainer() throws(FlatJSONFailure) {
        var open: [Bool] = []
        var byte = bytes[at]
        while true {
            // `byte`, at `at`, starts a value.
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                // The body's own object is one level.
                guard 1 + open.count < FlatJSON.maxDepth else { throw .malformed }
                let isObject = byte == UInt8(ascii: "{")
                open.append(isObject)
                at += 1
                let first = try requireNonWhitespace()
                if first == Self.close(isObject) {
                    at += 1
                    open.removeLast()
                } else {
                    byte = try elementStart(first, inObject: isObject)
                    continue
                }
            } else {
                _ = try scalar(byte)
            }
            // A value ended: close levels, or go on after a comma (a trailing one taken).
            while true {
                guard let isObject = open.last else { return }
                let after = try requireNonWhitespace()
                at += 1
                if after == Self.close(isObject) {
                    open.removeLast()
                    continue
                }
                guard after == UInt8(ascii: ",") else { throw .malformed }
                let next = try requireNonWhitespace()
                if next == Self.close(isObject) {
                    at += 1
                    open.removeLast()
                    continue
                }
                byte = try elementStart(next, inObject: isObject)
                break
            }
        }
    }

    private static func close(_ isObject: Bool) -> UInt8 { isObject ? UInt8(ascii: "}") : UInt8(ascii: "]") }

    /// At an element's first byte: in an object, its key and colon come first. The value's first byte.
    private mutating func elementStart(_ first: UInt8, inObject: Bool) throws(FlatJSONFailure) -> UInt8 {
        guard inObject else { return first }
        guard first == UInt8(ascii: "\"") else { throw .malformed }
        _ = try string()
        guard try requireNonWhitespace() == UInt8(ascii: ":") else { throw .malformed }
        at += 1
        return try requireNonWhitespace()
    }
}
