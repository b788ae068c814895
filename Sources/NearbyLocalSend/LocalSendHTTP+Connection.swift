import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NearbyBase

/// The connection half of `LocalSendHTTP`: opening a connection (TLS checked by fingerprint) and one
/// request and its answer on it, which a kept connection repeats (a session's uploads).
extension LocalSendHTTP {
    /// A connection to a device, opened; its TLS handshake may still be under way (`handshake`).
    struct Opened: Sendable {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        let handshake: EventLoopFuture<Void>?
        /// The fingerprint of the certificate the device showed, once it did.
        let seen: Locked<String?>
        let expected: String?
        let host: String
        let port: Int
    }

    /// One request: what it sends and how long each wait may take.
    struct Ask: Sendable {
        var method: HTTPMethod
        var path: String
        var body: Body
        /// Asks the device to keep the connection for another request (else `Connection: close`).
        var keepAlive: Bool
        var timeout: Duration
        var idle: Duration
        var answerLimit: Int
    }

    /// An answer, and whether the device keeps the connection for another request.
    struct Answer: Sendable {
        var response: Response
        var kept: Bool
    }

    /// Connects (within `timeout`) and sets up TLS when `https`: the certificate the device shows must
    /// hash to `expectedFingerprint`, when given, or the handshake fails before a byte of ours is sent.
    func open(host: String, port: Int, https: Bool, expectedFingerprint: String?, timeout: Duration) async throws(Failure) -> Opened {
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
        return Opened(channel: channel, handshake: handshake.withLock { $0 }, seen: seen, expected: expected, host: host, port: port)
    }

    /// Sends `ask` on an open connection (after its TLS handshake: NIOSSL would hold every byte
    /// written meanwhile, a whole file, for a receiver that is not serving us yet) and reads the
    /// answer, raced against `progress` (or a watchdog of its own): `timeout` for the handshake and
    /// the answer, `idle` for each wait for the device to take more of a file.
    static func exchange(
        _ ask: Ask, on opened: Opened, reader: PartReader<HTTPClientResponsePart>,
        outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>, progress: Watchdog?
    ) async throws(Failure) -> Answer {
        let watchdog = progress ?? Watchdog()
        // Whether a byte of the answer came, and whether a byte of the body went out.
        let stage = Locked<(answered: Bool, bodySent: Bool)>((false, false))
        do {
            return try await withThrowingTaskGroup(of: Answer?.self) { group in
                group.addTask {
                    if let handshake = opened.handshake {
                        if progress == nil { watchdog.arm(ask.timeout) }
                        try await handshake.get()
                    }
                    // A device may answer and close before our last write went out (the end of a
                    // request whose body it had read, its "busy" before the body): the write then
                    // fails on the closed connection while the whole answer waits in the reader.
                    // The answer is read before that failure is believed (issue 58: a friend's
                    // send said "closed before it answered" with the device's 200 on the wire).
                    var unwritten: (any Error)?
                    do {
                        try await Self.write(ask, host: opened.host, port: opened.port, to: outbound, watchdog: watchdog, stage: stage)
                    } catch {
                        unwritten = error
                    }
                    watchdog.arm(ask.timeout)
                    var status = 0
                    var kept = false
                    var collected: [UInt8] = []
                    while let part = try await reader.next() {
                        stage.withLock { $0.answered = true }
                        switch part {
                        case let .head(head):
                            status = Int(head.status.code)
                            kept = head.isKeepAlive
                        case var .body(buffer):
                            guard collected.count + buffer.readableBytes <= ask.answerLimit else {
                                throw Failure.protocolError("the answer is larger than \(ask.answerLimit) bytes")
                            }
                            collected += buffer.readBytes(length: buffer.readableBytes) ?? []
                        case .end:
                            return Answer(response: Response(status: status, body: collected, fingerprint: opened.seen.withLock { $0 }), kept: kept)
                        }
                    }
                    if stage.withLock({ $0.answered }) { throw Failure.protocolError("the connection closed before a whole answer came") }
                    if let unwritten { throw unwritten }
                    throw Failure.closedBeforeAnswer("the device closed the connection before it answered", bodySent: stage.withLock { $0.bodySent })
                }
                group.addTask {
                    if case .file = ask.body {} else { watchdog.arm(ask.timeout) }
                    await watchdog.expired()
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answer = first else {
                    opened.channel.channel.close(promise: nil)
                    throw Failure.timedOut("\(opened.host):\(opened.port) did not answer within \(Self.seconds(watchdog.lastSpan ?? ask.timeout)) s")
                }
                return answer
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            if let expected = opened.expected, let got = opened.seen.withLock({ $0 }), got != expected {
                throw .fingerprintMismatch(expected: expected, got: got)
            }
            if Task.isCancelled { throw .protocolError("cancelled") }
            let now = stage.withLock { $0 }
            if !now.answered { throw .closedBeforeAnswer(Self.describe(error), bodySent: now.bodySent) }
            throw .protocolError(Self.describe(error))
        }
    }

    /// The request's head and body.
    private static func write(
        _ ask: Ask, host: String, port: Int, to outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>,
        watchdog: Watchdog, stage: Locked<(answered: Bool, bodySent: Bool)>
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: ScopedAddress.authority(host, port: port))
        headers.add(name: "Connection", value: ask.keepAlive ? "keep-alive" : "close")
        switch ask.body {
        case .none:
            headers.add(name: "Content-Length", value: "0")
        case let .json(bytes):
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(bytes.count))
        case let .file(_, size, _):
            headers.add(name: "Content-Type", value: "application/octet-stream")
            headers.add(name: "Content-Length", value: String(size))
        }
        try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: ask.method, uri: ask.path, headers: headers)))
        switch ask.body {
        case .none: break
        case let .json(bytes):
            stage.withLock { $0.bodySent = !bytes.isEmpty }
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: bytes))))
        case let .file(path, size, sent):
            watchdog.arm(ask.idle)
            try await stream(path: path, size: size, to: outbound, sent: { bytes in
                watchdog.arm(ask.idle)
                sent(bytes)
            }, writing: { stage.withLock { $0.bodySent = true } })
        }
        try await outbound.write(.end(nil))
    }
}
