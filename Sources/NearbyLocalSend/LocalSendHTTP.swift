import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import NearbyBase

/// One HTTP/1.1 request to a LocalSend device, over TLS when it says `https` (NIOHTTP1's codec,
/// NIOSSL's TLS: no hand-written parser). The certificate it shows must hash to the fingerprint
/// we expect, when we expect one; otherwise the connection is refused before a byte of ours is
/// sent. Answers larger than `answerLimit` (`LocalSendLimits.jsonBodyBytes` unless said) are cut off with an error.
package struct LocalSendHTTP: Sendable {
    package struct Response: Sendable {
        package var status: Int
        package var body: [UInt8]
        /// The fingerprint of the certificate the device showed (nil over plain HTTP).
        package var fingerprint: String?
    }

    /// What a request sends: nothing, JSON, or a file read in chunks (`sent` told the bytes written so far).
    package enum Body: Sendable {
        case none
        case json([UInt8])
        case file(path: String, size: UInt64, sent: @Sendable (UInt64) -> Void)
    }

    package enum Failure: Error, Sendable {
        /// The certificate's SHA-256 is not the fingerprint the device announced.
        case fingerprintMismatch(expected: String, got: String)
        case timedOut(String)
        case unreachable(String)
        case protocolError(String)
        case io(path: String, reason: String)
        /// The connection ended before a byte of the answer came (`bodySent`: after some of the
        /// request's body went out): on a kept connection, what a device closing it idle looks like.
        case closedBeforeAnswer(String, bodySent: Bool)
    }

    let tls: NIOSSLContext

    /// Client TLS: any self-signed certificate, checked by fingerprint (`certificateVerification`
    /// must not be `.none`, or the callback never runs); an empty trust store so no CA bundle matters.
    package init(identity: LocalSendIdentity) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        configuration.shutdownTimeout = .milliseconds(500)
        // Our certificate is shown to every device (1.18's server requires one): one that cannot be
        // loaded is said in words, not dropped for a generic handshake error later.
        do {
            configuration.certificateChain = [.certificate(try NIOSSLCertificate(bytes: Array(identity.certificatePEM.utf8), format: .pem))]
        } catch {
            throw Unusable(what: "its certificate", error: error)
        }
        do {
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem))
        } catch {
            throw Unusable(what: "its private key", error: error)
        }
        tls = try NIOSSLContext(configuration: configuration)
    }

    /// The identity's certificate or key cannot be loaded for TLS: what, in words.
    struct Unusable: Error, CustomStringConvertible {
        var what: String
        var error: any Error
        var description: String { "\(what) cannot be loaded (\(ErrorWords.describe(error)))" }
    }

    /// Sends one request on a connection of its own (`Connection: close`) and reads the answer.
    /// `timeout` bounds connecting and waiting for the answer; while a file goes out, `idle` bounds
    /// each wait for the device to take more bytes. `progress`: the deadline of several requests
    /// sent at once (a session's uploads), pushed back by each one's bytes: a request the device has
    /// not taken up yet (a receiver that serves one connection at a time) waits for its TLS
    /// handshake as long as a sibling makes progress.
    package func request(
        host: String, port: Int, https: Bool, method: HTTPMethod, path: String, body: Body,
        expectedFingerprint: String?, timeout: Duration, idle: Duration = .seconds(30), progress: Watchdog? = nil,
        answerLimit: Int = LocalSendLimits.jsonBodyBytes
    ) async throws(Failure) -> Response {
        let opened = try await open(host: host, port: port, https: https, expectedFingerprint: expectedFingerprint, timeout: timeout)
        let ask = Ask(method: method, path: path, body: body, keepAlive: false, timeout: timeout, idle: idle, answerLimit: answerLimit)
        let answer: Answer
        do {
            answer = try await opened.channel.executeThenClose { inbound, outbound in
                try await Self.exchange(ask, on: opened, reader: PartReader(inbound.makeAsyncIterator()), outbound: outbound, progress: progress)
            }
        } catch let failure as Failure {
            guard case let .closedBeforeAnswer(reason, _) = failure else { throw failure }
            throw .protocolError(reason)
        } catch {
            throw .protocolError(Self.describe(error))
        }
        return answer.response
    }

    /// Writes the file in 64 KiB chunks, each write waiting for the channel to take the last
    /// (`writing` told before each chunk is handed to the connection, `sent` after).
    static func stream(
        path: String, size: UInt64, to outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>,
        sent: (UInt64) -> Void, writing: () -> Void = {}
    ) async throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Failure.io(path: path, reason: "cannot open it") }
        defer { try? handle.close() }
        var done: UInt64 = 0
        while done < size {
            try Task.checkCancellation()
            let want = Int(min(UInt64(64 * 1024), size - done))
            let chunk: Data
            do { chunk = try handle.read(upToCount: want) ?? Data() } catch {
                throw Failure.io(path: path, reason: "cannot read it: \(error.localizedDescription)")
            }
            guard !chunk.isEmpty else { throw Failure.io(path: path, reason: "it shrank while being sent") }
            writing()
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: chunk))))
            done += UInt64(chunk.count)
            sent(done)
        }
    }

    /// What went wrong with a connection, as a sentence a user understands (no "TLS:
    /// uncleanShutdown"): what the other device did, or what stopped us reaching it.
    static func describe(_ error: any Error) -> String {
        if let connect = error as? NIOConnectionError {
            return connect.connectionErrors.first.map { describe($0.error) } ?? "the device could not be reached"
        }
        if let io = error as? IOError { return describe(errno: io.errnoCode) }
        if let ssl = error as? NIOSSLError {
            switch ssl {
            case .uncleanShutdown: return "the device closed the connection before it answered"
            case .handshakeFailed: return "the encrypted connection could not be set up (it may not be a LocalSend device, or it refused our certificate)"
            default: return "the encrypted connection failed"
            }
        }
        if error is NIOSSLExtraError { return "the encrypted connection could not be set up" }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return "the device did not accept the connection in time"
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed: return "the device closed the connection before it answered"
            default: return "the connection failed"
            }
        }
        if error is HTTPParserError { return "the device answered with something that is not HTTP" }
        return "the connection failed (\(ErrorWords.describe(error)))"
    }

    /// A socket error in words.
    static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "nothing is listening there (connection refused): is LocalSend running on that device?"
        case ECONNRESET, EPIPE: "the device closed the connection before it answered"
        case ETIMEDOUT: "the device did not answer in time"
        case EHOSTUNREACH, ENETUNREACH, EHOSTDOWN: "that address cannot be reached from this machine"
        case EMFILE, ENFILE: "this machine has no room for one more open connection"
        default: "the connection failed: \(String(cString: strerror(code)))"
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration / .milliseconds(1)) / 1000
        return value == value.rounded() ? String(Int(value)) : String(value)
    }
}

/// A deadline that can be pushed back: `expired()` returns once `arm`'s last span passed without
/// another `arm` (an idle timeout), or when the task is cancelled.
package final class Watchdog: Sendable {
    private let state = Locked<(deadline: ContinuousClock.Instant?, span: Duration?)>((nil, nil))

    func arm(_ span: Duration) { state.withLock { $0 = (.now + span, span) } }

    var lastSpan: Duration? { state.withLock { $0.span } }

    /// Sleeps until the deadline; when it was pushed back meanwhile, until the new one.
    func expired() async {
        while !Task.isCancelled {
            let deadline = state.withLock { $0.deadline } ?? .now + .seconds(1)
            if deadline <= .now { return }
            try? await Task.sleep(until: deadline, clock: .continuous)
        }
    }
}

extension LocalSendHTTP {
    /// A `POST` without a body whose answer is not needed (`/cancel`), waited for at most
    /// `timeout`. Built on futures, not on the task: it still goes out when the task that sends it
    /// was cancelled (Ctrl-C is why it is sent).
    func fireAndWait(host: String, port: Int, https: Bool, path: String, expectedFingerprint: String?, timeout: Duration) async {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let answered = loop.makePromise(of: Void.self)
        let expected = expectedFingerprint?.uppercased()
        let tls = self.tls
        let milliseconds = Int64(timeout / .milliseconds(1))
        let timer = loop.scheduleTask(in: .milliseconds(milliseconds)) { answered.fail(ChannelError.connectTimeout(.milliseconds(milliseconds))) }
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(.milliseconds(milliseconds))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if https {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil) { certificates, promise in
                            let got = certificates.first.flatMap { try? $0.toDERBytes() }.map { LocalSendIdentity.fingerprint(ofDER: $0) }
                            promise.succeed(got != nil && (expected == nil || got == expected) ? .certificateVerified : .failed)
                        })
                    }
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(AnswerSeen(promise: answered))
                }
            }
            .connect(host: host, port: port)
        connected.whenSuccess { channel in
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: "\(host):\(port)")
            headers.add(name: "Content-Length", value: "0")
            headers.add(name: "Connection", value: "close")
            channel.write(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: headers)), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        connected.whenFailure { answered.fail($0) }
        _ = try? await answered.futureResult.get()
        timer.cancel()
        if let channel = try? await connected.get() { try? await channel.close() }
    }

    /// Succeeds `promise` when the TLS handshake is over; fails it when the connection ends first.
    /// Completes its promise when the client TLS handshake is over (fails it when the connection ends first).
    final class TLSHandshakeDone: ChannelInboundHandler, Sendable {
        typealias InboundIn = NIOAny
        let promise: EventLoopPromise<Void>
        init(promise: EventLoopPromise<Void>) { self.promise = promise }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent { promise.succeed(()) }
            context.fireUserInboundEventTriggered(event)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.eof)
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            promise.fail(ChannelError.ioOnClosedChannel)
        }
    }

    /// Succeeds `promise` when the answer's head arrives; fails it when the connection closes first.
    private final class AnswerSeen: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<Void>
        init(promise: EventLoopPromise<Void>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head = Self.unwrapInboundIn(data) { promise.succeed(()) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.eof)
        }
    }
}
