import Foundation
import NIOCore
import NearbyCore
import Testing
@testable import NearbyWeb
@testable import NearbyTransfer

@Suite struct WebTokenAndRouteTests {
    @Test func tokensCarry128RandomBitsAsBase32() {
        let token = WebToken.random()
        #expect(token.text.count == 26)
        #expect(token.text.utf8.allSatisfy { WebToken.alphabet.contains($0) })
        #expect(WebToken.random() != token)
        // Known vector: RFC 4648's base32 of 16 zero bytes, lowercase, unpadded.
        #expect(WebToken.make(from: Array(repeating: 0, count: 16)).text == String(repeating: "a", count: 26))
        #expect(WebToken.make(from: Array(repeating: 0xFF, count: 16)).text == String(repeating: "7", count: 25) + "4")
    }

    @Test func onlyTheTokenOpensAnyPath() {
        let token = WebToken(text: "abcdefghijklmnopqrstuvwxyz")
        func route(_ method: String, _ uri: String, uploads: Bool = false) -> WebRoute {
            WebRoute.of(method: method, uri: uri, token: token, items: 2, uploads: uploads)
        }
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/") == .page)
        #expect(route("HEAD", "/abcdefghijklmnopqrstuvwxyz/?x=1") == .page)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/1/report.pdf") == .item(1))
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/2/x") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/-1/x") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/01x/x") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz") == .notFound)
        #expect(route("GET", "/") == .notFound)
        #expect(route("GET", "") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyZ/") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxy/") == .notFound)
        #expect(route("GET", "/../abcdefghijklmnopqrstuvwxyz/") == .notFound)
        #expect(route("GET", "//abcdefghijklmnopqrstuvwxyz/") == .notFound)
        #expect(route("POST", "/abcdefghijklmnopqrstuvwxyz/upload") == .notFound)
        #expect(route("POST", "/abcdefghijklmnopqrstuvwxyz/upload", uploads: true) == .upload)
        #expect(route("DELETE", "/abcdefghijklmnopqrstuvwxyz/") == .notFound)
        #expect(route("GET", "/abcdefghijklmnopqrstuvwxyz/0/a/b/c") == .notFound)
    }

    @Test func rangesAsBrowsersSendThem() {
        #expect(ByteRange.parse(nil, size: 100) == .whole)
        #expect(ByteRange.parse("bytes=0-", size: 100) == .part(lower: 0, upper: 100))
        #expect(ByteRange.parse("bytes=10-19", size: 100) == .part(lower: 10, upper: 20))
        #expect(ByteRange.parse("bytes=90-200", size: 100) == .part(lower: 90, upper: 100))
        // An end with more digits than a UInt64 holds is a huge end: clamped, 206.
        #expect(ByteRange.parse("bytes=0-99999999999999999999", size: 100) == .part(lower: 0, upper: 100))
        #expect(ByteRange.parse("bytes=-99999999999999999999", size: 100) == .part(lower: 0, upper: 100))
        #expect(ByteRange.parse("bytes=99999999999999999999-", size: 100) == .unsatisfiable)
        // Only digits: no sign.
        #expect(ByteRange.parse("bytes=+5-+10", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=5-+10", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-+5", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-10", size: 100) == .part(lower: 90, upper: 100))
        #expect(ByteRange.parse("bytes=-1000", size: 100) == .part(lower: 0, upper: 100))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=20-10", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=x-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,5-6", size: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=0-", size: 0) == .unsatisfiable)
    }

    @Test func coverageCountsAResumedDownloadWithItsFirstPart() {
        var coverage = Coverage(sizes: [100, 0])
        coverage.add(0, 0..<40, client: "10.0.0.2")
        #expect(!coverage.isComplete(0))
        coverage.add(0, 40..<100, client: "10.0.0.2")
        #expect(coverage.isComplete(0))
        #expect(!coverage.allComplete)
        coverage.done(1)
        #expect(coverage.allComplete)
    }

    /// Bytes 0–49 to one client and 50–99 to another: nobody has the file.
    @Test func coverageIsPerClient() {
        var coverage = Coverage(sizes: [100])
        coverage.add(0, 0..<50, client: "10.0.0.2")
        coverage.add(0, 50..<100, client: "10.0.0.3")
        #expect(!coverage.allComplete)
        coverage.add(0, 0..<50, client: "10.0.0.3")
        #expect(coverage.allComplete)
        // Clients beyond the cap are forgotten, oldest first: bounded, and only later complete.
        var many = Coverage(sizes: [100])
        many.add(0, 0..<50, client: "first")
        for n in 0..<Coverage.maxClients { many.add(0, 0..<10, client: "c\(n)") }
        #expect(many.sent.count == Coverage.maxClients && many.sent["first"] == nil)
        many.add(0, 50..<100, client: "first")
        #expect(!many.allComplete)
    }
}

@Suite struct MultipartParserTests {
    static let boundary = "----WebKitFormBoundaryAbC123"

    static func body(_ parts: [Part], extra: [String] = []) -> [UInt8] {
        var out: [UInt8] = []
        for (field, filename, data) in parts {
            out += Array("--\(boundary)\r\n".utf8)
            let file = filename.map { "; filename=\"\($0)\"" } ?? ""
            out += Array("Content-Disposition: form-data; name=\"\(field)\"\(file)\r\n".utf8)
            for line in extra { out += Array((line + "\r\n").utf8) }
            out += Array("Content-Type: application/octet-stream\r\n\r\n".utf8)
            out += data
            out += Array("\r\n".utf8)
        }
        out += Array("--\(boundary)--\r\n".utf8)
        return out
    }

    typealias Part = (String, String?, [UInt8])

    /// Feeds `bytes` in pieces of `step`, joining data events per part.
    static func parse(_ bytes: [UInt8], step: Int) throws -> [Part] {
        guard var parser = MultipartParser(boundary: boundary) else { return [] }
        var parts: [Part] = []
        var index = 0
        while index < bytes.count {
            for event in try parser.feed(ByteBuffer(bytes: bytes[index..<min(bytes.count, index + step)])) { collect(event, into: &parts) }
            index += step
        }
        try parser.finish()
        return parts
    }

    static func collect(_ event: MultipartParser.Event, into parts: inout [Part]) {
        switch event {
        case let .begin(field, filename): parts.append((field, filename, []))
        case let .data(data) where !parts.isEmpty: parts[parts.count - 1].2 += Array(data.readableBytesView)
        case .data: break
        case .end: break
        }
    }

    @Test func partsComeOutWholeHoweverTheBytesAreCut() throws {
        // Data that holds the boundary's beginning, CR LF and dashes, to tempt the delimiter search.
        let tricky = Array("a\r\n--\r\n----WebKitFormBoundaryAbC12x\r\n-".utf8) + (0..<5000).map { UInt8($0 % 251) }
        let body = Self.body([("file", "one.bin", tricky), ("note", nil, Array("hi".utf8)), ("file", "two", [])])
        for step in [1, 2, 7, 64, 4096, body.count] {
            let parts = try Self.parse(body, step: step)
            #expect(parts.count == 3)
            #expect(parts[0].0 == "file" && parts[0].1 == "one.bin" && parts[0].2 == tricky)
            #expect(parts[1].0 == "note" && parts[1].1 == nil && parts[1].2 == Array("hi".utf8))
            #expect(parts[2].1 == "two" && parts[2].2.isEmpty)
        }
    }

    @Test func fileNamesAreTakenAsSentForTheSanitizerToJudge() throws {
        let parts = try Self.parse(Self.body([("file", #"..\/..\/etc\"pass;wd"#, [1])]), step: 3)
        #expect(parts.first?.1 == #"../../etc"pass;wd"#)
        #expect(SafePath.components(of: parts.first?.1 ?? "").last == #"etc"pass;wd"#)
        #expect(MultipartParser.parameters(#"form-data; name="f"; filename="a;b.txt""#)["filename"] == "a;b.txt")
    }

    @Test func boundsHold() throws {
        // A part header larger than the bound.
        var huge = Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"f\"\r\nX: ".utf8)
        huge += Array(repeating: UInt8(ascii: "a"), count: 9000)
        #expect(throws: MultipartParser.Failure.headerTooLarge) { _ = try Self.parse(huge, step: 1000) }
        // A part larger than its own Content-Length.
        let liar = Self.body([("file", "x", Array(repeating: 7, count: 100))], extra: ["Content-Length: 10"])
        #expect(throws: MultipartParser.Failure.partLargerThanDeclared) { _ = try Self.parse(liar, step: 50) }
        // A body that ends inside a part.
        let cut = Array(Self.body([("file", "x", [1, 2, 3])]).dropLast(10))
        #expect(throws: MultipartParser.Failure.self) { _ = try Self.parse(cut, step: 5) }
        // Too many parts.
        guard var parser = MultipartParser(boundary: Self.boundary, maxParts: 2) else { return }
        #expect(throws: MultipartParser.Failure.tooManyParts) {
            _ = try parser.feed(ByteBuffer(bytes: Self.body([("a", nil, []), ("b", nil, []), ("c", nil, [])])))
        }
        #expect(MultipartParser(boundary: String(repeating: "b", count: 71)) == nil)
        #expect(MultipartParser.boundary(ofContentType: "multipart/form-data; boundary=\"x y\"") == "x y")
        #expect(MultipartParser.boundary(ofContentType: "text/plain; boundary=x") == nil)
    }
}

@Suite struct ZipLayoutTests {
    @Test func sizesAddUpAndHeadersSayWhatTheyHold() {
        let entries = [
            ZipLayout.Entry(name: "photos/a.jpg", size: 3, modified: 1_700_000_000),
            ZipLayout.Entry(name: "photos/empty", size: 0, modified: 1_700_000_000, directory: true),
        ]
        guard let layout = ZipLayout(entries) else {
            Issue.record("no layout")
            return
        }
        let first = layout.localHeader(0), second = layout.localHeader(1)
        let crc = Array("abc".utf8).withUnsafeBytes { ZipLayout.crc32(0, $0) }
        #expect(crc == 0x3524_41C2)
        let central = layout.centralDirectory(crcs: [crc, 0])
        let total = first.count + 3 + 16 + second.count + 16 + central.count
        #expect(UInt64(total) == layout.totalSize)
        #expect(layout.offsets == [0, UInt64(first.count + 3 + 16)])
        #expect(first.prefix(4) == [0x50, 0x4B, 0x03, 0x04])
        #expect(String(decoding: second.suffix(13), as: UTF8.self) == "photos/empty/")
        #expect(Array(central.suffix(22).prefix(4)) == [0x50, 0x4B, 0x05, 0x06])
        #expect(ZipLayout([ZipLayout.Entry(name: "big", size: 1 << 32, modified: 0)]) == nil)
    }
}

@Suite struct QRAndPageTests {
    @Test func aQRCodeOfAnAddressHasItsFinderPatterns() throws {
        let code = try #require(QRCode("http://10.99.0.2:43127/abcdefghijklmnopqrstuvwxyz/"))
        #expect(code.width >= 21 && (code.width - 21) % 4 == 0)
        // The three finder patterns: dark 7x7 squares' corners.
        for (row, column) in [(0, 0), (0, code.width - 1), (code.width - 1, 0), (6, 6)] {
            #expect(code.isDark(row, column))
        }
        let lines = code.terminalLines()
        #expect(lines.count == (code.width + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == code.width + 8 })
    }

    @Test func pagesEscapeWhatIsNotOursAndLoadNothing() {
        let page = WebPages.share(device: "<Bob's \"Pi\">", items: [.init(name: "<script>x</script>.txt", size: 1_234_567, files: nil)])
        #expect(!page.contains("<script>x"))
        #expect(page.contains("&lt;Bob&#39;s &quot;Pi&quot;&gt;"))
        #expect(page.contains("1.2 MB"))
        #expect(page.contains("name=\"viewport\""))
        for page in [page, WebPages.upload(device: "Pi")] {
            #expect(!page.contains("http://") && !page.contains("https://") && !page.contains("src="))
        }
        #expect(WebPages.upload(device: "Pi").contains("enctype=\"multipart/form-data\""))
        #expect(WebShare.disposition("é \"x\".txt") == "attachment; filename=\"_ _x_.txt\"; filename*=UTF-8''%C3%A9%20%22x%22.txt")
    }
}
