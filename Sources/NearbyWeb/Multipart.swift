/// A multipart/form-data body (RFC 7578) read as it streams, as a pure machine: bytes in, parts'
/// beginnings, data and ends out, never more than one part header (`maxHeaderBytes`) plus one
/// delimiter held. A part's own `Content-Length`, when it gives one, is a bound it must keep
/// (`partLargerThanDeclared`). `MultipartParserTests` drive it without sockets.
package struct MultipartParser: Sendable {
    package enum Event: Equatable, Sendable {
        /// A part begins: its form field's name and, for a file, the file name as the browser sent it
        /// (untrusted: `WebUploads` keeps only a sanitized base name).
        case begin(field: String, filename: String?)
        case data([UInt8])
        case end
    }

    package enum Failure: Error, Equatable, Sendable {
        case malformed(String)
        case headerTooLarge
        case tooManyParts
        case partLargerThanDeclared
    }

    enum State: Equatable { case preamble, afterDelimiter, headers, body, done }

    let delimiter: [UInt8]
    let maxHeaderBytes: Int
    let maxParts: Int
    private var state = State.preamble
    private var pending: [UInt8] = [13, 10]
    private var start = 0
    private var parts = 0
    /// The current part's declared length and what it has carried so far.
    private var declared: Int?
    private var carried = 0

    package var isDone: Bool { state == .done }

    /// `boundary` from the request's Content-Type (1–70 characters, RFC 2046).
    package init?(boundary: String, maxHeaderBytes: Int = 8192, maxParts: Int = 1000) {
        guard (1...70).contains(boundary.utf8.count) else { return nil }
        delimiter = Array("\r\n--".utf8) + Array(boundary.utf8)
        self.maxHeaderBytes = maxHeaderBytes
        self.maxParts = maxParts
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

    package mutating func feed(_ bytes: some Collection<UInt8>) throws(Failure) -> [Event] {
        guard state != .done else { return [] }
        pending.append(contentsOf: bytes)
        var events: [Event] = []
        progress: while true {
            switch state {
            case .preamble:
                guard let at = find(delimiter, from: start) else {
                    // Keep what could be the start of the delimiter; the preamble is bounded too.
                    start = max(start, pending.count - delimiter.count + 1)
                    break progress
                }
                start = at + delimiter.count
                state = .afterDelimiter
            case .afterDelimiter:
                guard pending.count - start >= 2 else { break progress }
                let pair = (pending[start], pending[start + 1])
                if pair == (45, 45) {
                    state = .done
                    break progress
                }
                guard pair == (13, 10) else { throw .malformed("no line end after a boundary") }
                start += 2
                state = .headers
            case .headers:
                guard let end = find([13, 10, 13, 10], from: start, within: maxHeaderBytes + 4) else {
                    if pending.count - start > maxHeaderBytes { throw .headerTooLarge }
                    break progress
                }
                let header = Array(pending[start..<end])
                start = end + 4
                parts += 1
                guard parts <= maxParts else { throw .tooManyParts }
                let (field, filename, length) = try Self.partHeader(header)
                declared = length
                carried = 0
                events.append(.begin(field: field, filename: filename))
                state = .body
            case .body:
                if let at = find(delimiter, from: start) {
                    try carry(at - start)
                    if at > start { events.append(.data(Array(pending[start..<at]))) }
                    events.append(.end)
                    start = at + delimiter.count
                    state = .afterDelimiter
                } else {
                    let safe = pending.count - delimiter.count + 1
                    if safe > start {
                        try carry(safe - start)
                        events.append(.data(Array(pending[start..<safe])))
                        start = safe
                    }
                    break progress
                }
            case .done:
                break progress
            }
        }
        if start > 0 {
            pending.removeFirst(start)
            start = 0
        }
        return events
    }

    private mutating func carry(_ count: Int) throws(Failure) {
        carried += count
        if let declared, carried > declared { throw .partLargerThanDeclared }
    }

    /// The body ended: every part must have ended with the closing delimiter.
    package func finish() throws(Failure) {
        guard state == .done else { throw .malformed("the body ended inside a part") }
    }

    private func find(_ needle: [UInt8], from: Int, within limit: Int = .max) -> Int? {
        guard let first = needle.first, pending.count - from >= needle.count else { return nil }
        let last = min(pending.count - needle.count, from > Int.max - limit ? Int.max : from + limit)
        var index = from
        while index <= last {
            if pending[index] == first {
                var matched = true
                for offset in 1..<needle.count where pending[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return index }
            }
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
