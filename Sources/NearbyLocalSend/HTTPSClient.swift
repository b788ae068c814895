import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import NearbyCore
import Synchronization

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
        if let certificate = try? NIOSSLCertificate(bytes: Array(identity.certificatePEM.utf8), format: .pem),
           let key = try? NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem) {
            configuration.certificateChain = [.certificate(certificate)]
            configuration.privateKey = .privateKey(key)
        }
        tls = try NIOSSLContext(configuration: configuration)
    }

    /// Sends one request and reads the answer. `timeout` bounds connecting and waiting for the
    /// answer; while a file goes out, `idle` bounds each wait for the device to take more bytes.
    /// `progress`: the deadline of several requests sent at once (a session's uploads), pushed back
    /// by each one's bytes: a request the device has not taken up yet (a receiver that serves one
    /// connection at a time) waits for its TLS handshake as long as a sibling makes progress.
    package func request(
        host: String, port: Int, https: Bool, method: HTTPMethod, path: String, body: Body,
        expectedFingerprint: String?, timeout: Duration, idle: Duration = .seconds(30), progress: Watchdog? = nil,
        answerLimit: Int = LocalSendLimits.jsonBodyBytes
    ) async throws(Failure) -> Response {
        let seen = Locked<String?>(nil)
        let handshake = Locked<EventLoopFuture<Void>?>(nil)
        let expected = expectedFingerprint?.uppercased()
        let tls = self.tls
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(Int64(timeout / .milliseconds(1))))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        if https {
                            let handler = try NIOSSLClientHandler(context: tls, serverHostname: nil) { certificates, promise in
                                guard let leaf = certificates.first, let der = try? leaf.toDERBytes() else {
                                    promise.succeed(.failed)
                                    return
                                }
                                let got = LocalSendIdentity.fingerprint(ofDER: der)
                                seen.withLock { $0 = got }
                                promise.succeed(expected == nil || expected == got ? .certificateVerified : .failed)
                            }
                            try sync.addHandler(handler)
                            let gate = TLSHandshakeDone(promise: channel.eventLoop.makePromise())
                            handshake.withLock { $0 = gate.promise.futureResult }
                            try sync.addHandler(gate)
                        }
                        try sync.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw .unreachable("cannot connect to \(host):\(port): \(Self.describe(error))")
        }
        let watchdog = progress ?? Watchdog()
        let handshakeDone = handshake.withLock { $0 }
        do {
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask {
                    try await channel.executeThenClose { inbound, outbound in
                        // Nothing is written before the handshake is over: NIOSSL would hold every
                        // byte written meanwhile (a whole file) for a receiver that is not serving us yet.
                        if let handshakeDone {
                            if progress == nil { watchdog.arm(timeout) }
                            try await handshakeDone.get()
                        }
                        var headers = HTTPHeaders()
                        headers.add(name: "Host", value: "\(host):\(port)")
                        headers.add(name: "Connection", value: "close")
                        switch body {
                        case .none:
                            headers.add(name: "Content-Length", value: "0")
                        case let .json(bytes):
                            headers.add(name: "Content-Type", value: "application/json")
                            headers.add(name: "Content-Length", value: String(bytes.count))
                        case let .file(_, size, _):
                            headers.add(name: "Content-Type", value: "application/octet-stream")
                            headers.add(name: "Content-Length", value: String(size))
                        }
                        try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)))
                        switch body {
                        case .none: break
                        case let .json(bytes): try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: bytes))))
                        case let .file(path, size, sent):
                            watchdog.arm(idle)
                            try await Self.stream(path: path, size: size, to: outbound, sent: { bytes in
                                watchdog.arm(idle)
                                sent(bytes)
                            })
                        }
                        try await outbound.write(.end(nil))
                        watchdog.arm(timeout)
                        var status = 0
                        var collected: [UInt8] = []
                        for try await part in inbound {
                            switch part {
                            case let .head(head): status = Int(head.status.code)
                            case var .body(buffer):
                                guard collected.count + buffer.readableBytes <= answerLimit else {
                                    throw Failure.protocolError("the answer is larger than \(answerLimit) bytes")
                                }
                                collected += buffer.readBytes(length: buffer.readableBytes) ?? []
                            case .end:
                                return Response(status: status, body: collected, fingerprint: seen.withLock { $0 })
                            }
                        }
                        throw Failure.protocolError("the connection closed before a whole answer came")
                    }
                }
                group.addTask {
                    if case .file = body {} else { watchdog.arm(timeout) }
                    await watchdog.expired()
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else {
                    channel.channel.close(promise: nil)
                    throw Failure.timedOut("\(host):\(port) did not answer within \(Self.seconds(watchdog.lastSpan ?? timeout)) s")
                }
                return response
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            if let expected, let got = seen.withLock({ $0 }), got != expected {
                throw .fingerprintMismatch(expected: expected, got: got)
            }
            if Task.isCancelled { throw .protocolError("cancelled") }
            throw .protocolError(Self.describe(error))
        }
    }

    /// Writes the file in 64 KiB chunks, each write waiting for the channel to take the last.
    static func stream(
        path: String, size: UInt64, to outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>,
        sent: (UInt64) -> Void
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
        return "the connection failed (\(error))"
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
    private let state = Mutex<(deadline: ContinuousClock.Instant?, span: Duration?)>((nil, nil))

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
