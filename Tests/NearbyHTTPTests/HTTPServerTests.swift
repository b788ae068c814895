import NIOCore
import NIOHTTP1
import NIOPosix
import NearbyCore
import NearbyHTTP
import Testing
import NearbyBase

/// The serving layer over real sockets on 127.0.0.1: a request reaches the routes with its body,
/// and the one deadline closes a connection that says nothing, or stops inside a body.
@Suite struct HTTPServerTests {
    /// Answers `URI LENGTH` of the body (at most 100 bytes), then closes; a CONNECT, a 404 with no
    /// body (as the web pages answer it).
    struct Echo: HTTPRoutes {
        func answer(_ head: HTTPRequestHead, body: HTTPBody, on connection: HTTPConnection, visit: Void) async throws -> Bool {
            if head.method == .CONNECT {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "0")
                headers.add(name: "Connection", value: "close")
                try await connection.outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers)))
                try await connection.outbound.write(.end(nil))
                return false
            }
            let text = try await body.whole(limit: 100).map { "\(head.uri) \($0.count)" } ?? "too long"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            headers.add(name: "Connection", value: "close")
            try await connection.outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
            try await connection.outbound.write(.body(.byteBuffer(ByteBuffer(string: text))))
            try await connection.outbound.write(.end(nil))
            return false
        }
    }

    /// Everything a connection receives until it closes.
    final class Collect: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private var bytes = ByteBuffer()
        let done: EventLoopPromise<ByteBuffer>
        init(done: EventLoopPromise<ByteBuffer>) { self.done = done }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var piece = unwrapInboundIn(data)
            bytes.writeBuffer(&piece)
        }
        func channelInactive(context: ChannelHandlerContext) { done.succeed(bytes) }
    }

    /// Sends `request` and returns what came back before the server closed (nil: not closed within 20 s).
    static func exchange(_ port: Int, _ request: String) async throws -> String? {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: ByteBuffer.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collect(done: done)) } }
            .connect(host: "127.0.0.1", port: port).get()
        defer { channel.close(promise: nil) }
        if !request.isEmpty { try await channel.writeAndFlush(ByteBuffer(string: request)).get() }
        let answer = await firstResult(within: .seconds(20)) { try? await done.futureResult.get() }
        return answer.map { String(buffer: $0) }
    }

    static func serving(_ limits: Admission.Limits, _ body: @Sendable (Int) async throws -> Void) async throws {
        let server = try await HTTPServer.bind(port: 0, backlog: 8, admission: Admission(limits: limits))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await server.run(Echo()) }
            try await body(server.port)
            group.cancelAll()
        }
    }

    @Test func aRequestReachesItsRoutesWithItsBody() async throws {
        try await Self.serving(Admission.Limits()) { port in
            let answer = try await Self.exchange(port, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
            #expect(answer?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(answer?.hasSuffix("\r\n\r\n/x 5") == true)
        }
    }

    /// NIO's framing took the length off any answer to CONNECT; the answer keeps its own.
    @Test func anAnswerToCONNECTKeepsItsContentLength() async throws {
        try await Self.serving(Admission.Limits()) { port in
            let answer = try await Self.exchange(port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            #expect(answer?.hasPrefix("HTTP/1.1 404 Not Found\r\n") == true)
            #expect(answer?.contains("\r\nContent-Length: 0\r\n") == true)
        }
    }

    @Test func aSilentConnectionIsClosedAtTheHandshakeDeadline() async throws {
        try await Self.serving(Admission.Limits(handshake: .milliseconds(200))) { port in
            let answer = try await Self.exchange(port, "")
            #expect(answer == "")
        }
    }

    /// The idle deadline shorter than the handshake's: brought forward, the timer is armed again
    /// (left at the handshake's minute, `exchange` gives up after 20 s).
    @Test func aBodyThatStopsIsClosedAtTheIdleDeadline() async throws {
        try await Self.serving(Admission.Limits(handshake: .seconds(60), idle: .milliseconds(200))) { port in
            let answer = try await Self.exchange(port, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nab")
            #expect(answer == "")
        }
    }
}
