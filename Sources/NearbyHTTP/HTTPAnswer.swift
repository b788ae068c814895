import NIOCore
import NIOHTTP1
import NearbyBase

/// The one answer writer and the one status map of every HTTP server a node runs (LocalSend's
/// HTTPS and the web pages): a whole answer always carries its own `Content-Length` and says
/// whether the connection stays, and a refusal's status is decided by its code in one place.
package enum HTTPAnswer {
    /// The longest request target either server takes: past it, 414 and the connection closes
    /// (the same for LocalSend's API and the web pages' links, which are far shorter).
    package static let maxURIBytes = 4096

    /// Writes a whole answer: `Content-Type` (when given), `Content-Length`, `headers`, `Connection`;
    /// the body unless `headOnly` (a HEAD request: the length of the body it would have had).
    package static func write(
        _ status: HTTPResponseStatus, body: [UInt8] = [], type: String? = nil, headers extra: [(String, String)] = [],
        keepAlive: Bool, headOnly: Bool = false, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        if let type { headers.add(name: "Content-Type", value: type) }
        headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in extra { headers.add(name: name, value: value) }
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        if !headOnly, !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
        try await outbound.write(.end(nil))
    }

    /// The status an upload refused for `error` is answered with, by either server: too large 413,
    /// over the quota 507, refused 403, no room just now (`busy`: the node's descriptors or its
    /// strangers' share of them) 503, damaged 422, timed out 408, cut short or malformed 400,
    /// anything else 500.
    package static func status(refusing error: NearbyError) -> HTTPResponseStatus {
        switch error.transferCode {
        case .tooLarge?: .payloadTooLarge
        case .quota?: .insufficientStorage
        case .refused?: .forbidden
        case .busy?: .serviceUnavailable
        case .integrity?: .unprocessableEntity
        case .timeout?: .requestTimeout
        case .incomplete?, .malformed?: .badRequest
        default: .internalServerError
        }
    }
}
