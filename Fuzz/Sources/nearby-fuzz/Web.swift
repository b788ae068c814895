import Foundation
import NIOCore
@testable import NearbyTransfer
@testable import NearbyWeb

/// The HTTP pieces nearby parses itself (the web share and drop box; LocalSend cleans its names
/// with the same `SafePath`): multipart bodies, Range, the route from a path, names from peers.
enum WebTargets {
    static let all = [
        FuzzTarget(name: "http-multipart", run: multipart),
        FuzzTarget(name: "http-range", run: range),
        FuzzTarget(name: "http-route", run: route),
        FuzzTarget(name: "http-names", run: names),
    ]

    /// What a parser said: its events, consecutive data joined, and whether and how it failed.
    struct Parsed: Equatable {
        var events: [MultipartParser.Event] = []
        var failure: MultipartParser.Failure?
        var finished: MultipartParser.Failure??

        mutating func add(_ new: [MultipartParser.Event]) {
            for event in new {
                if case var .data(more) = event, case var .data(joined)? = events.last {
                    joined.writeBuffer(&more)
                    events[events.count - 1] = .data(joined)
                } else {
                    events.append(event)
                }
            }
        }
    }

    static func parse(boundary: String, _ reads: [ArraySlice<UInt8>]) -> Parsed? {
        guard var parser = MultipartParser(boundary: boundary, maxHeaderBytes: 512, maxParts: 16) else { return nil }
        var out = Parsed()
        do {
            for read in reads { out.add(try parser.feed(ByteBuffer(bytes: read))) }
        } catch {
            out.failure = error
            out.events = []  // fed whole, a failing read returns no events: compare the failure alone
            return out
        }
        do { try parser.finish(); out.finished = .some(nil) } catch { out.finished = .some(error) }
        return out
    }

    /// A form upload as a browser (or anyone) sends it, the boundary on the first line: the parser
    /// fed in random cuts says what it says fed whole; no part's data holds the delimiter.
    static func multipart(_ input: [UInt8]) {
        let (line, rest) = Fuzz.split(input, at: UInt8(ascii: "\n"))
        let header = Fuzz.text(line)
        let boundary = MultipartParser.boundary(ofContentType: header) ?? MultipartParser.boundary(ofContentType: "multipart/form-data; boundary=" + header) ?? "XyZ"
        let (whole, pieces) = Fuzz.pieces(rest)
        guard let atOnce = parse(boundary: boundary, [whole[...]]), let inPieces = parse(boundary: boundary, pieces) else { return }
        Fuzz.check(atOnce == inPieces, "multipart in pieces: \(inPieces), whole: \(atOnce)")
        let delimiter = Array("\r\n--\(boundary)".utf8)
        for case let .data(data) in atOnce.events {
            let bytes = Array(data.readableBytesView)
            Fuzz.check(bytes.count < delimiter.count || !contains(bytes, delimiter), "a part's data holds its delimiter")
        }
    }

    static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// `Range:` against a body's size (the first 8 bytes, or a small one): a part lies inside the body.
    static func range(_ input: [UInt8]) {
        let sizes: [UInt64] = [0, 1, 100, 1 << 40, UInt64.max]
        var size = sizes[Int(input.first ?? 0) % sizes.count]
        var header = Array(input.dropFirst())
        if (input.first ?? 0) >= 128, input.count >= 9 {
            size = input[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
            header = Array(input.dropFirst(9))
        }
        switch ByteRange.parse(Fuzz.text(header), size: size) {
        case let .part(lower, upper):
            Fuzz.check(lower < upper && upper <= size, "range \(lower)..<\(upper) of a body of \(size)")
        case .whole, .unsatisfiable: break
        }
    }

    static let token = WebToken(text: "abcdefghijklmnopqrstuvwxyz")

    /// The route from a request line's method and path: an item index is always one of the items.
    static func route(_ input: [UInt8]) {
        let methods = ["GET", "HEAD", "POST", "PUT", "get"]
        let method = methods[Int(input.first ?? 0) % methods.count]
        let uri = Fuzz.text(input.dropFirst())
        for (items, uploads) in [(0, true), (3, false)] {
            if case let .item(index) = WebRoute.of(method: method, uri: uri, token: token, items: items, uploads: uploads) {
                Fuzz.check(index >= 0 && index < items, "item \(index) of \(items)")
            }
        }
    }

    /// Names from peers (upload names, LocalSend's and nearby's file paths, zip entries): a cleaned
    /// name never leaves its directory, the fast path agrees with the careful one, cleaning twice is
    /// cleaning once, and zip names stay distinct.
    static func names(_ input: [UInt8]) {
        let claimed = Fuzz.text(input)
        let parts = SafePath.components(of: claimed)
        Fuzz.check(parts == SafePath.checkedComponents(of: claimed), "SafePath's fast path and careful path disagree")
        Fuzz.check(!parts.isEmpty && parts.count <= SafePath.maxDepth, "\(parts.count) components")
        for part in parts {
            // By bytes: a "/" joined to a combining mark is no "/" Character, and still a "/" to the kernel.
            Fuzz.check(!part.isEmpty && part != "." && part != ".." && !part.utf8.contains(UInt8(ascii: "/")) && !part.utf8.contains(UInt8(ascii: "\\")),
                       "component \(part.debugDescription)")
            Fuzz.check(part.utf8.count <= SafePath.maxComponentBytes, "a component of \(part.utf8.count) bytes")
        }
        let base = URL(fileURLWithPath: "/srv/received", isDirectory: true)
        let placed = parts.reduce(base) { $0.appendingPathComponent($1) }.standardizedFileURL.path
        // By bytes: String.hasPrefix compares whole characters, and a first component that starts
        // with a combining mark (U+0301) joins the "/" before it into one (the CI run's finding).
        Fuzz.check(placed.utf8.starts(with: "/srv/received/".utf8), "\(claimed.debugDescription) cleaned to \(placed)")
        let relative = SafePath.relative(claimed)
        Fuzz.check(SafePath.relative(relative) == relative, "cleaning \(relative.debugDescription) again changes it")
        let cleaned = Fuzz.text(input).split(separator: "\n", omittingEmptySubsequences: false).prefix(8).map { SafePath.relative(String($0)) }
        let zipped = WebShareItem.zipNames(cleaned + cleaned)
        Fuzz.check(Set(zipped).count == zipped.count, "zip names repeat: \(zipped)")
        for name in zipped {
            Fuzz.check(name.utf8.split(separator: UInt8(ascii: "/")).allSatisfy { $0.count <= SafePath.maxComponentBytes }, "zip name \(name.debugDescription)")
        }
    }
}
