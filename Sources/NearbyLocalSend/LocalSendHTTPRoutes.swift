import NIOCore
import NIOHTTP1
import NIOSSL
import NearbyHTTP
import NearbyBase

/// LocalSend's routes on the shared server (a URI too long is the layer's 414): a sender gone while its offer
/// waits for `nearby accept` withdraws it at once; a sender whose certificate is known gives its
/// place among the strangers' connections back.
struct LocalSendHTTPRoutes<Receiver: LocalSendRoutes>: HTTPRoutes {
    let receiver: Receiver

    func visit(_ connection: HTTPConnection) -> LocalSendVisit {
        LocalSendVisit(host: connection.channel.remoteAddress.map { ScopedAddress.of($0) } ?? "?")
    }

    func answer(_ head: HTTPRequestHead, body: HTTPBody, on connection: HTTPConnection, visit: LocalSendVisit) async throws -> Bool {
        var request = LocalSendRequest(head: head, host: visit.host)
        request.clientFingerprint = await visit.shown(on: connection, receiver: receiver)
        let answer: LocalSendAnswer
        if request.path == LocalSendDefaults.apiPrefix + "/prepare-upload" {
            let asked = request
            guard let answered = await connection.unlessClosed({ await receiver.handle(asked, body: body) }) else { return false }
            answer = answered
        } else {
            answer = await receiver.handle(request, body: body)
        }
        let keep = head.isKeepAlive && answer.keepAlive
        try await LocalSendServer.write(answer, to: connection.outbound, keepAlive: keep)
        return keep
    }
}

/// What LocalSend remembers about one connection: who it is from and the certificate its sender showed.
final class LocalSendVisit: Sendable {
    let host: String
    /// Nil until the first request; then the fingerprint shown, or none.
    private let fingerprint = Locked<String??>(nil)

    init(host: String) { self.host = host }

    /// The fingerprint of the certificate the sender showed, if any: asked once (the handshake is
    /// over once a request arrives); a sender we know is no stranger, and its connection no longer
    /// counts against theirs.
    func shown(on connection: HTTPConnection, receiver: some LocalSendRoutes) async -> String? {
        if let known = fingerprint.withLock({ $0 }) { return known }
        let certificate = try? await connection.channel.nioSSL_peerCertificate().get()
        let shown = certificate.flatMap { try? $0.toDERBytes() }.map { LocalSendIdentity.fingerprint(ofDER: $0) }
        fingerprint.withLock { $0 = .some(shown) }
        if let shown, await receiver.knows(fingerprint: shown) { connection.ticket.release() }
        return shown
    }
}
