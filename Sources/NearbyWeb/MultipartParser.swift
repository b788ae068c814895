import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A multipart/form-data body (RFC 7578) read as it streams, as a pure machine: chunks in, parts'
/// beginnings, data and ends out. A part's data comes out as slices of the chunks fed in, never
/// copied; the delimiter is found with `memchr` for its CR (a boundary holds no CR, so a CR
/// starts at most one candidate and every byte is looked at a bounded number of times). Between
/// chunks it holds only how much of the delimiter the last chunk ended with, plus at most one part
/// header (`maxHeaderBytes`). A part's own `Content-Length`, when it gives one, is a bound it must
/// keep (`partLargerThanDeclared`). `MultipartParserTests` drive it without sockets.
struct MultipartParser: Sendable {
    package enum Event: Equatable, Sendable {
        /// A part begins: its form field's name and, for a file, the file name as the browser sent it
        /// (untrusted: `WebUploads` keeps only a sanitized base name).
        case begin(field: String, filename: String?)
        /// Some of the part's bytes: a slice of a chunk fed in (or of the delimiter, for a held
        /// beginning of it that turned out to be data).
        case data(ByteBuffer)
        case end
    }

    package enum Failure: Error, Equatable, Sendable {
        case malformed(String)
        case headerTooLarge
        case tooManyParts
        case partLargerThanDeclared
    }

    enum State: Equatable { case preamble, afterDelimiter, headers, body, done }

    /// CR LF `--` boundary.
    let delimiter: ByteBuffer
    let maxHeaderBytes: Int
    let maxParts: Int
    private var state = State.preamble
    /// How many of the delimiter's first bytes the chunks so far ended with. The body begins as if
    /// after a CR LF, so the first delimiter needs none.
    private var matched = 2
    /// After a delimiter: the first of the two bytes that say what follows, when a chunk ended
    /// between them.
    private var after: UInt8?
    /// The part header read so far, up to its blank line.
    private var header = ByteBuffer()
    private var parts = 0
    /// The current part's declared length and what it has carried so far.
    private var declared: Int?
    private var carried = 0

    package var isDone: Bool { state == .done }

    /// `boundary` from the request's Content-Type (1–70 characters, RFC 2046; never a CR or LF,
    /// which no header value holds and the delimiter search relies on).
    package init?(boundary: String, maxHeaderBytes: Int = 8192, maxParts: Int = 1000) {
        guard (1...70).contains(boundary.utf8.count), !boundary.utf8.contains(13), !boundary.utf8.contains(10) else { return nil }
        var delimiter = ByteBuffer(string: "\r\n--")
        delimiter.writeString(boundary)
        self.delimiter = delimiter
        self.maxHeaderBytes = maxHeaderBytes
        self.maxParts = maxParts
        header.reserveCapacity(256)
    }

    /// The boundary parameter of a `multipart/form-data` Content-Type, or nil.
    package static func boundary(ofContentType value: String?) -> String? {
        guard let value, value.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in value.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpaces.lowercased() == "boundary" else { continue }
            var boundary = pair[1].trimmingSpaces
            if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 { boundary = String(boundary.dropFirst().dropLast()) }
            return boundary
        }
        return nil
    }

    /// The events `chunk` completes; its data events are slices of it.
    package mutating func feed(_ chunk: ByteBuffer) throws(Failure) -> [Event] {
        var chunk = chunk
        var events: [Event] = []
        while chunk.readableBytes > 0 {
            switch state {
            case .preamble, .body: try delimited(&chunk, into: &events)
            case .afterDelimiter: try afterDelimiter(&chunk)
            case .headers: try headers(&chunk, into: &events)
            case .done: return events
            }
        }
        return events
    }

    /// The body ended: every part must have ended with the closing delimiter.
    package func finish() throws(Failure) {
        guard state == .done else { throw .malformed("the body ended inside a part") }
    }

    /// The preamble or a part's data, up to and through the next delimiter.
    private mutating func delimited(_ chunk: inout ByteBuffer, into events: inout [Event]) throws(Failure) {
        let length = delimiter.readableBytes
        if matched > 0 {
            // The last chunk ended with the delimiter's first `matched` bytes: does this one go on?
            let have = min(length - matched, chunk.readableBytes)
            if chunk.readableBytesView.prefix(have).elementsEqual(delimiter.readableBytesView.dropFirst(matched).prefix(have)) {
                chunk.moveReaderIndex(forwardBy: have)
                matched += have
                if matched == length { delimiterFound(&events) }
                return
            }
            // Data after all (only the delimiter's first byte is a CR, so none of it starts another).
            if state == .body, let held = delimiter.getSlice(at: delimiter.readerIndex, length: matched) { try data(held, &events) }
            matched = 0
        }
        guard let (at, whole) = Self.search(delimiter, in: chunk) else {
            if state == .body, let all = chunk.readSlice(length: chunk.readableBytes) { try data(all, &events) }
            chunk.moveReaderIndex(to: chunk.writerIndex)
            return
        }
        if state == .body, at > 0, let before = chunk.readSlice(length: at) {
            try data(before, &events)
        } else {
            chunk.moveReaderIndex(forwardBy: at)
        }
        if whole {
            chunk.moveReaderIndex(forwardBy: length)
            delimiterFound(&events)
        } else {
            matched = chunk.readableBytes
            chunk.moveReaderIndex(to: chunk.writerIndex)
        }
    }

    private mutating func delimiterFound(_ events: inout [Event]) {
        if state == .body { events.append(.end) }
        matched = 0
        after = nil
        state = .afterDelimiter
    }

    private mutating func data(_ slice: ByteBuffer, _ events: inout [Event]) throws(Failure) {
        carried += slice.readableBytes
        if let declared, carried > declared { throw .partLargerThanDeclared }
        events.append(.data(slice))
    }

    /// The two bytes after a delimiter: CR LF before a part's header, `--` after the last part.
    private mutating func afterDelimiter(_ chunk: inout ByteBuffer) throws(Failure) {
        guard let byte = chunk.readInteger(as: UInt8.self) else { return }
        guard let first = after else {
            after = byte
            return
        }
        after = nil
        switch (first, byte) {
        case (45, 45): state = .done
        case (13, 10):
            header.clear()
            state = .headers
        default: throw .malformed("no line end after a boundary")
        }
    }

    /// A part's header, up to its blank line, at most `maxHeaderBytes` (and that line) held.
    private mutating func headers(_ chunk: inout ByteBuffer, into events: inout [Event]) throws(Failure) {
        let before = header.readableBytes
        let take = min(maxHeaderBytes + 4 - before, chunk.readableBytes)
        guard var piece = chunk.getSlice(at: chunk.readerIndex, length: take) else { return }
        header.writeBuffer(&piece)
        guard let end = Self.blankLine(in: header, from: max(0, before - 3)) else {
            chunk.moveReaderIndex(forwardBy: take)
            if header.readableBytes >= maxHeaderBytes + 4 { throw .headerTooLarge }
            return
        }
        chunk.moveReaderIndex(forwardBy: end + 4 - before)
        parts += 1
        guard parts <= maxParts else { throw .tooManyParts }
        let (field, filename, length) = try Self.partHeader(Array(header.readableBytesView.prefix(end)))
        header.clear()
        declared = length
        carried = 0
        events.append(.begin(field: field, filename: filename))
        state = .body
    }

    /// Where `needle` (a CR, then no other CR) begins in `chunk`: whole, or cut off by the chunk's
    /// end. Each CR found by `memchr` is compared at most up to the next CR, so this is linear.
    static func search(_ needle: ByteBuffer, in chunk: ByteBuffer) -> (at: Int, whole: Bool)? {
        chunk.withUnsafeReadableBytes { bytes in
            needle.withUnsafeReadableBytes { needle in
                guard let base = bytes.baseAddress, let wanted = needle.baseAddress else { return nil }
                var from = 0
                while from < bytes.count, let hit = memchr(base + from, 13, bytes.count - from) {
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    let compared = min(needle.count, bytes.count - at)
                    if memcmp(hit, wanted, compared) == 0 { return (at, compared == needle.count) }
                    from = at + 1
                }
                return nil
            }
        }
    }

    /// Where CR LF CR LF begins in `header`, looking from `from`.
    static func blankLine(in header: ByteBuffer, from: Int) -> Int? {
        let view = header.readableBytesView
        var index = view.startIndex + from
        while index + 3 < view.endIndex {
            if view[index] == 13, view[index + 1] == 10, view[index + 2] == 13, view[index + 3] == 10 { return index - view.startIndex }
            index += 1
        }
        return nil
    }

    /// The form field's name, the file name and a declared length, from a part's header lines.
    static func partHeader(_ bytes: [UInt8]) throws(Failure) -> (String, String?, Int?) {
        var field: String?
        var filename: String?
        var length: Int?
        for line in bytes.split(separator: 10) {
            let text = String(decoding: line.last == 13 ? line.dropLast() : line[...], as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { continue }
            let name = text[..<colon].lowercased()
            let value = String(text[text.index(after: colon)...])
            if name == "content-length" {
                guard let declared = Int(value.trimmingSpaces), declared >= 0 else { throw .malformed("a part's Content-Length is not a number") }
                length = declared
            }
            guard name == "content-disposition" else { continue }
            let parameters = Self.parameters(value)
            field = parameters["name"]
            filename = parameters["filename"]
        }
        guard let field else { throw .malformed("a part without a form field name") }
        return (field, filename, length)
    }

    /// `form-data; name="a"; filename="b"` as a dictionary; quoted strings may hold `;` and `\"`.
    static func parameters(_ value: String) -> [String: String] {
        var result: [String: String] = [:]
        var scalars = Array(value.unicodeScalars)[...]
        while !scalars.isEmpty {
            scalars = scalars.drop(while: { $0 == " " || $0 == "\t" || $0 == ";" })
            let key = String(String.UnicodeScalarView(scalars.prefix(while: { $0 != "=" && $0 != ";" }))).trimmingSpaces.lowercased()
            scalars = scalars.drop(while: { $0 != "=" && $0 != ";" })
            guard scalars.first == "=" else { continue }
            scalars = scalars.dropFirst()
            var text = String.UnicodeScalarView()
            if scalars.first == "\"" {
                scalars = scalars.dropFirst()
                while let scalar = scalars.first {
                    scalars = scalars.dropFirst()
                    if scalar == "\"" { break }
                    if scalar == "\\", let next = scalars.first {
                        text.append(next)
                        scalars = scalars.dropFirst()
                    } else {
                        text.append(scalar)
                    }
                }
            } else {
                text.append(contentsOf: scalars.prefix(while: { $0 != ";" }))
                scalars = scalars.drop(while: { $0 != ";" })
            }
            if !key.isEmpty, result[key] == nil, result.count < 16 { result[key] = String(text).trimmingSpaces }
        }
        return result
    }
}
