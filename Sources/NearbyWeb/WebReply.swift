import NIOCore
import NIOHTTP1
import NearbyBase
import NearbyHTTP

/// Writes one answer on a connection: a wrong link's 404, a page, a short text, or a streamed body.
package struct WebReply: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    let channel: any Channel
    let deadline: ConnectionDeadline
    let idle: Duration
    let keepAlive: Bool

    /// A wrong or missing token, or a path that names nothing: 404 with the same short page for
    /// every such path (`WebPages.wrongLink`: it names nothing that serves here, no token, no
    /// item), so a person who mistyped the link is told so and a guesser learns nothing; the
    /// connection closes.
    package func notFound() async throws {
        try await page(WebPages.wrongLink, status: .notFound, close: true)
    }

    /// `script`: the page has inline script (its Content-Security-Policy allows it).
    package func page(_ html: String, status: HTTPResponseStatus = .ok, head: Bool = false, close: Bool = false, script: Bool = false) async throws {
        try await whole(Array(html.utf8), type: "text/html; charset=utf-8", status: status, head: head, close: close, script: script)
    }

    package func text(_ text: String, status: HTTPResponseStatus, close: Bool = false) async throws {
        try await whole(Array(text.utf8), type: "text/plain; charset=utf-8", status: status, head: false, close: close)
    }

    func whole(_ bytes: [UInt8], type: String, status: HTTPResponseStatus, head: Bool, close: Bool, script: Bool = false) async throws {
        try await HTTPAnswer.write(
            status, body: bytes, type: type, headers: WebPages.securityHeaders(script: script), keepAlive: keepAlive && !close, headOnly: head,
            to: outbound)
    }

    /// The head of a streamed body; then `chunk` for each piece and `end`.
    func start(status: HTTPResponseStatus, headers: HTTPHeaders) async throws {
        var headers = headers
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        deadline.push(idle)
    }

    /// Returns once the connection took it (its write buffer below the high-water mark); a block
    /// (`settleBytes` or more) only once every byte of it is in the kernel: the next is read only then,
    /// so a browser that stops reading holds one block of the node's memory, not two or three
    /// (NIO's buffer, the writer's, the one read ahead).
    func chunk(_ buffer: ByteBuffer) async throws {
        let large = buffer.readableBytes >= Self.settleBytes
        try await outbound.write(.body(.byteBuffer(buffer)))
        deadline.push(idle)
        if large {
            // An empty body part after it completes once every write before it did (NIO's writes are
            // written in order; the HTTP encoder passes an empty part through for this). The writer
            // hands its parts to the event loop before `write` returns, so this one comes after.
            try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer()))).get()
            deadline.push(idle)
        }
    }

    static let settleBytes = 64 * 1024

    func end() async throws { try await outbound.write(.end(nil)) }

    /// Returns once NIO holds none of the answer's bytes (all in the kernel's socket buffer): a
    /// command that ends after the last download must not close the connection on unsent bytes.
    /// Bounded by the connection's idle deadline, which closes it (an error) when the browser stops reading.
    func drained() async throws {
        while true {
            let pending = try await channel.getOption(.bufferedWritableBytes).get()
            if pending == 0 { return }
            guard channel.isActive else { throw HTTPBody.Failure.closed }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// The web server's admission limits on the core's one door (`Admission`): as nearby's links —
/// 16 connections per address, 128 in all, 10 s to the first request, 30 s of silence — with the
/// test knobs `NEARBY_WEB_TOTAL`, `_PER_ADDRESS`, `_HANDSHAKE_MS`, `_IDLE_MS`.
extension Admission.Limits {
    package static func web(environment: [String: String]) -> Admission.Limits {
        Admission.Limits().with(environment: environment, prefix: "WEB")
    }
}
