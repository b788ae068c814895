import NIOCore
import NIOHTTP1
import NearbyHTTP
import Testing
import NearbyBase

@Suite struct HTTPBodyTests {
    static func body(_ parts: [HTTPServerRequestPart?]) -> HTTPBody {
        let queue = Locked(parts)
        return HTTPBody(next: { queue.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
    }

    @Test func chunksThenTheEnd() async throws {
        let body = Self.body([.body(ByteBuffer(string: "ab")), .body(ByteBuffer(string: "c")), .end(nil)])
        #expect(try await body.whole(limit: 3) == Array("abc".utf8))
    }

    @Test func aBodyLongerThanItsLimitIsNotRead() async throws {
        let body = Self.body([.body(ByteBuffer(string: "abcd")), .end(nil)])
        #expect(try await body.whole(limit: 3) == nil)
    }

    @Test func aHeadInsideABodyOrAConnectionThatClosesIsAFailure() async {
        let head = HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"))
        await #expect(throws: HTTPBody.Failure.malformed) { _ = try await Self.body([.body(ByteBuffer(string: "a")), head]).whole(limit: 10) }
        await #expect(throws: HTTPBody.Failure.closed) { _ = try await Self.body([.body(ByteBuffer(string: "a"))]).whole(limit: 10) }
    }
}

@Suite struct BodyBlocksTests {
    /// Pieces of every size around a block's: the bytes come out whole and in order, every write a
    /// block at most, except a piece that was a block or more by itself.
    @Test func bytesComeOutInOrderInBlocks() {
        let size = BodyBlocks.size
        let lengths = [1, 7, size - 1, 1, size, 3, size + 5, 100, size / 2, size / 2 + 1, 0, 9]
        var blocks = BodyBlocks()
        var sent: [UInt8] = []
        var written: [UInt8] = []
        for (index, length) in lengths.enumerated() {
            let piece = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            sent += piece
            for due in blocks.add(ByteBuffer(bytes: piece)) {
                #expect(due.readableBytes <= size || due.readableBytes == length)
                written += Array(due.readableBytesView)
            }
        }
        if let rest = blocks.rest() { written += Array(rest.readableBytesView) }
        #expect(blocks.rest() == nil)
        #expect(written == sent)
    }
}
