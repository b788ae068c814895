import NIOCore
import NIOHTTP1
import NIOPosix
import NearbyBase
@testable import NearbyHTTP
import Testing

/// The serving layer's own answers over real sockets: a request that asks to switch protocols ends
/// its connection, a body waited for with `Expect: 100-continue` is asked for, and a connection
/// carries a bounded number of requests.
@Suite struct HTTPServerLimitsTests {
    /// Answers `200` with `URI LENGTH` of the body, keeping the connection when the request does.
    struct Kept: HTTPRoutes {
        func answer(_ head: HTTPRequestHead, body: HTTPBody, on connection: HTTPConnection, visit: Void) async throws -> Bool {
            let text = try await body.whole(limit: 100).map { "\(head.uri) \($0.count)" } ?? "too long"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            headers.add(name: "Connection", value: head.isKeepAlive ? "keep-alive" : "close")
            try await connection.outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
            try await connection.outbound.write(.body(.byteBuffer(ByteBuffer(string: text))))
            try await connection.outbound.write(.end(nil))
            return true
        }
    }

    static func serving(_ body: @Sendable (Int) async throws -> Void) async throws {
        let server = try await HTTPServer.bind(port: 0, backlog: 8, admission: Admission())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await server.run(Kept()) }
            try await body(server.port)
            group.cancelAll()
        }
    }

    @Test(arguments: ["Connection: Upgrade\r\nUpgrade: h2c\r\n", "Connection: Upgrade\r\nUpgrade: websocket\r\n"])
    func aRequestToSwitchProtocolsIsAnsweredAndClosed(fields: String) async throws {
        try await Self.serving { port in
            let junk = String(repeating: "x", count: 200_000)
            let answer = try await HTTPServerTests.exchange(port, "GET /a HTTP/1.1\r\nHost: a\r\n\(fields)\r\n" + junk)
            #expect(answer?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(answer?.contains("\r\nConnection: close\r\n") == true)
        }
    }

    @Test func aBodyWaitedForWithExpectIsAskedFor() async throws {
        try await Self.serving { port in
            let answer = try await HTTPServerTests.exchange(
                port, "POST /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
            #expect(answer?.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") == true, "\(answer ?? "")")
            #expect(answer?.hasSuffix("/u 5") == true)
        }
    }

    @Test func aConnectionCarriesAtMostAThousandRequests() async throws {
        try await Self.serving { port in
            let answer = try await HTTPServerTests.exchange(port, String(repeating: "GET /r HTTP/1.1\r\nHost: a\r\n\r\n", count: 1001))
            let answers = (answer ?? "").components(separatedBy: "HTTP/1.1 200 OK").count - 1
            #expect(answers == 1000)
            #expect(answer?.hasSuffix("Connection: close\r\n\r\n/r 0") == true)
        }
    }

    /// One bound on the request target for every server, answered by the layer: the routes never
    /// see a target over it (LocalSend answered 414, the web pages 404, each with its own bound).
    @Test func aTargetOverItsBoundIsTheLayers414() async throws {
        try await Self.serving { port in
            let fits = "/" + String(repeating: "a", count: HTTPAnswer.maxURIBytes - 1)
            let kept = try await HTTPServerTests.exchange(port, "GET \(fits) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(kept?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            let answer = try await HTTPServerTests.exchange(port, "GET \(fits)a HTTP/1.1\r\nHost: a\r\n\r\nGET /r HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(answer == "HTTP/1.1 414 URI Too Long\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "\(answer ?? "")")
        }
    }

    /// One map from a refusal's code to its status, for LocalSend's uploads and the web pages'.
    @Test func aRefusalHasOneStatusWhicheverServerAnswers() {
        let refused = { (code: TransferCode) in HTTPAnswer.status(refusing: .transferFailed(path: "a", code: code, reason: "r")) }
        #expect(refused(.busy) == .serviceUnavailable)
        #expect(refused(.quota) == .insufficientStorage)
        #expect(refused(.tooLarge) == .payloadTooLarge)
        #expect(refused(.refused) == .forbidden)
        #expect(refused(.integrity) == .unprocessableEntity)
        #expect(refused(.incomplete) == .badRequest)
        #expect(HTTPAnswer.status(refusing: .connectionFailed("gone")) == .internalServerError)
    }

    @Test func anHTTPConnectionTakenHasNoDelay() async throws {
        let listener = try await HTTPListener.bind(port: 0, backlog: 8, admission: Admission())
        let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: listener.port).get()
        defer { client.close(promise: nil) }
        try await listener.channel.executeThenClose { connections in
            for try await admitted in connections {
                #expect(try await admitted.channel.getOption(.tcpOption(.tcp_nodelay)) == 1, "LocalSend's and the web share's server")
                admitted.channel.close(promise: nil)
                break
            }
        }
    }
}
