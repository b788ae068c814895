import NIOCore
import NIOHTTP1
import NIOSSL
import NearbyHTTP
import Synchronization
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LocalSend's upload API, served over HTTPS with our certificate (NIOHTTP1 behind NIOSSL): the
/// routes of protocol v2 sections 3.2, 4 and 6.1. Every request is bounded before it is read: the
/// header (NIOHTTP1's decoder limits), the URI, a JSON body; every connection is admitted by the
/// core's `Admission`, as nearby's links are (caps per address and in all, the oldest idle
/// stranger's connection evicted for a newcomer, a handshake and an idle deadline), and a sender
/// whose certificate is known gives its place back. What the routes decide is `LocalSendReceiver`'s.
package struct LocalSendServer: Sendable {
    /// Strangers' connections: 64 in all, 8 from one address, 10 s to the first request, 30 s idle
    /// (`NEARBY_LOCALSEND_TOTAL`, `_PER_ADDRESS`, `_HANDSHAKE_MS`, `_IDLE_MS` for tests).
    package static let admissionLimits = Admission.Limits(total: 64, perAddress: 8, handshake: .seconds(10), idle: .seconds(30))
        .with(prefix: "LOCALSEND")

    /// The node's one HTTP serving layer, here behind TLS.
    let server: HTTPServer
    /// The port we listen on: 53317 unless it was taken.
    package var port: Int { server.port }
    /// 53317 was taken, so `port` is another one.
    package let moved: Bool

    /// Waits (at most `limit`) until no request is being answered: `accept --localsend` ends once
    /// the answer that ended its transfer has gone out.
    package func settled(within limit: Duration = .seconds(2)) async { await server.settled(within: limit) }

    /// How long a browsing or sending command's server waits, closing a connection, for the
    /// device's TLS goodbye (NIOSSL's default, 5 s, for a receiving node). A phone keeps the
    /// connection of its `/register` open and idle (the official app's HTTP client pools it), so
    /// a command that found it by name, and stops hearing registers, would wait that long for it.
    package static let briefGoodbye: TimeAmount = .milliseconds(100)

    /// Listens on `port` (LocalSend's own by default), else on any free port; over IPv4 and IPv6.
    /// `goodbye`: how long a connection we close waits for the device's TLS close_notify.
    package static func bind(
        identity: LocalSendIdentity, port: Int = LocalSendDefaults.port, admission: Admission = Admission(limits: admissionLimits),
        goodbye: TimeAmount = .seconds(5)
    ) async throws(NearbyError) -> LocalSendServer {
        let tls: NIOSSLContext
        do {
            let certificate = try NIOSSLCertificate(bytes: Array(identity.certificatePEM.utf8), format: .pem)
            let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            // A sender's certificate is asked for, not required: the official apps show theirs (and
            // then must be the fingerprint they announce, LocalSendRequest.clientFingerprint); others
            // (localsend-cli) show none. Any self-signed one is taken: its fingerprint is the identity.
            configuration.certificateVerification = .optionalVerification
            configuration.trustRoots = .certificates([])
            configuration.shutdownTimeout = goodbye
            tls = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .identityIO(path: "localsend.json", reason: "its certificate cannot serve TLS: \(error)")
        }
        func attempt(_ port: Int) async throws -> HTTPServer {
            let secure: @Sendable (any Channel) throws -> Void = { channel in
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls) { _, verified in verified.succeed(.certificateVerified) })
            }
            // Both families, so a device found over IPv6 can register and upload; IPv4 alone on a
            // system without IPv6.
            do {
                return try await HTTPServer.bind(host: "::", port: port, backlog: 64, admission: admission, secure: secure)
            } catch let error as IOError where [EAFNOSUPPORT, EADDRNOTAVAIL, EPROTONOSUPPORT].contains(error.errnoCode) {
                return try await HTTPServer.bind(port: port, backlog: 64, admission: admission, secure: secure)
            }
        }
        do {
            return LocalSendServer(server: try await attempt(port), moved: false)
        } catch let error as IOError where error.errnoCode == EADDRINUSE && port != 0 {
            do {
                return LocalSendServer(server: try await attempt(0), moved: true)
            } catch {
                throw .listenFailed("cannot listen for LocalSend: TCP \(port) is taken and no other port could be had: \(ErrorWords.listening(error, port: 0))")
            }
        } catch {
            throw .listenFailed("cannot listen for LocalSend: \(ErrorWords.listening(error, port: port))")
        }
    }

    /// Serves until cancelled, each connection (admitted by `Admission` when accepted) in its own child task.
    package func run(_ receiver: some LocalSendRoutes) async {
        await server.run(LocalSendHTTPRoutes(receiver: receiver))
    }

    static func write(_ answer: LocalSendAnswer, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, keepAlive: Bool) async throws {
        try await HTTPAnswer.write(
            HTTPResponseStatus(statusCode: answer.status), body: answer.body, type: answer.body.isEmpty ? nil : "application/json",
            keepAlive: keepAlive, to: outbound)
    }
}

/// A request as the routes see it: method, path, query and who sent it.
package struct LocalSendRequest: Sendable {
    package var method: HTTPMethod
    package var path: String
    package var query: [String: String]
    package var host: String
    package var contentLength: Int?
    /// The fingerprint of the TLS certificate the sender showed (uppercase hex), nil when it showed none.
    package var clientFingerprint: String?

    init(head: HTTPRequestHead, host: String) {
        method = head.method
        let pieces = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = pieces.first.map(String.init) ?? ""
        var query: [String: String] = [:]
        if pieces.count == 2 {
            for pair in pieces[1].split(separator: "&").prefix(16) {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                query[key] = kv.count == 2 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
            }
        }
        self.query = query
        self.host = host
        contentLength = head.headers.first(name: "Content-Length").flatMap { Int($0) }
    }

    package init(
        method: HTTPMethod, path: String, query: [String: String] = [:], host: String = "10.0.0.9", contentLength: Int? = nil,
        clientFingerprint: String? = nil
    ) {
        self.clientFingerprint = clientFingerprint
        self.method = method
        self.path = path
        self.query = query
        self.host = host
        self.contentLength = contentLength
    }
}

/// An answer: a status and a JSON body (empty for none).
package struct LocalSendAnswer: Sendable, Equatable {
    package var status: Int
    package var body: [UInt8]
    /// False when the request's body was not read to its end: the connection cannot be reused.
    package var keepAlive = true

    package static func status(_ code: Int, _ message: String? = nil, keepAlive: Bool = true) -> LocalSendAnswer {
        let body = message.map { Array(#"{"message":"#.utf8) + Array(EventEncoder.quoted($0).utf8) + Array("}".utf8) } ?? []
        return LocalSendAnswer(status: code, body: body, keepAlive: keepAlive)
    }
}
