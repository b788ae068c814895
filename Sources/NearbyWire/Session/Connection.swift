import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import NearbyBase

/// A connection after the preamble: frames in both directions, over TLS or not.
package struct FrameChannel: Sendable {
    package let channel: NIOAsyncChannel<Frame, Frame>
    package let encrypted: Bool
    package let remote: String
    /// The public key (SPKI DER) the peer's TLS certificate carries; nil without TLS. Filled in by
    /// the TLS verification callback, read after the handshake.
    let certificateKey: Locked<[UInt8]?>
    /// Message frames of the session, delivered on the event loop once the node arms it.
    let shortcut: MessageShortcut
    /// The place this incoming connection holds among links that are not sessions (`Admission`),
    /// given back when it becomes a session or closes.
    var admission: Admission.Ticket? = nil
    /// When the TCP connection was made: the preamble, TLS and the identity handshake all end
    /// within `Handshake.deadline` of it, however slowly the bytes come.
    var started = NIODeadline.now()
}

/// What the preamble leads to.
package enum Negotiated: Sendable {
    case frames(FrameChannel)
    /// Not a nearby peer (an MPC app, a port scanner): closed.
    case foreign(remote: String, what: String)
    /// A nearby peer whose encryption preference is incompatible with ours: closed.
    case refused(remote: String, theirs: EncryptionPreference?, decision: Preamble.Decision)
    /// A client that connected and closed without sending a byte (a TCP reachability check such as
    /// `nearby doctor`'s, or a port scan): nothing to report.
    case silent(remote: String)
}

extension Negotiated {
    /// The connection's frames once the preamble agreed; otherwise nil, and what happened is said
    /// (a `rejected` event, or a debug line for a client that closed without a word).
    package func frames(ours: EncryptionPreference, reporting events: any EventSink) -> FrameChannel? {
        switch self {
        case let .frames(frames):
            return frames
        case let .silent(remote):
            NearbyLog.logger.debug("\(remote) connected and closed without a word (a reachability check or a scan)")
        case let .foreign(remote, what):
            events.emit(Events.Rejected(address: remote, reason: "not a nearby peer: \(what)", code: "not-a-nearby-peer"))
        case let .refused(remote, theirs, decision):
            let error = Preamble.mismatch(ours: ours, theirs: theirs, decision: decision)
            events.emit(Events.Rejected(address: remote, reason: error.errorDescription ?? "", code: error.code))
        }
        return nil
    }
}

/// Runs the plaintext preamble on a fresh TCP connection, then puts TLS (when agreed) and the frame
/// codec in its place and wraps the channel for async use. Everything here runs on the event loop.
final class PreambleHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Role { case client, server }

    private let role: Role
    private let preference: EncryptionPreference
    private let tls: NIOSSLContext
    private let promise: EventLoopPromise<Negotiated>
    private var received = ByteBuffer()
    private var done = false
    private var timeout: Scheduled<Void>?
    private var started = NIODeadline.now()

    init(role: Role, preference: EncryptionPreference, tls: NIOSSLContext, promise: EventLoopPromise<Negotiated>) {
        self.role = role
        self.preference = preference
        self.tls = tls
        self.promise = promise
    }

    private func remote(_ context: ChannelHandlerContext) -> String {
        context.channel.remoteAddress.map(AddressWords.describe) ?? "unknown"
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        started = .now()
        timeout = context.eventLoop.scheduleTask(deadline: started + Handshake.deadline) {
            let (handler, context) = loopBound.value
            handler.finish(context, .foreign(
                remote: handler.remote(context), what: "a client that did not finish the nearby preamble in \(Handshake.deadlineText)"))
        }
        if context.channel.isActive { channelActive(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        guard role == .client, !done, received.readerIndex == 0, received.writerIndex == 0 else { return }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Preamble.hello(preference))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        guard !done else { return }
        let seen = Array(received.readableBytesView.prefix(Preamble.size))
        if role == .server, !seen.isEmpty, !Preamble.magic.starts(with: seen.prefix(4)) {
            finish(context, .foreign(remote: remote(context), what: Preamble.describeForeign(seen)))
            return
        }
        guard seen.count == Preamble.size else { return }
        received.moveReaderIndex(forwardBy: Preamble.size)
        switch role {
        case .server: serverDecides(context, seen)
        case .client: clientHears(context, seen)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if role == .server, received.writerIndex == 0 {
            finish(context, .silent(remote: remote(context)))
        } else {
            finish(context, .foreign(remote: remote(context), what: "a peer that closed the connection during the preamble"))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(context, .foreign(remote: remote(context), what: "a connection that failed: \(ErrorWords.describe(error))"))
    }

    private func serverDecides(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        switch Preamble.parseClient(bytes) {
        case let .foreign(what):
            finish(context, .foreign(remote: remote(context), what: what))
        case let .nearby(theirs):
            let decision = Preamble.decide(server: preference, client: theirs)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Preamble.reply(decision))), promise: nil)
            switch decision {
            case .tls: upgrade(context, tls: true)
            case .plaintext: upgrade(context, tls: false)
            case .refusedNone, .refusedRequired:
                finish(context, .refused(remote: remote(context), theirs: theirs, decision: decision))
            }
        }
    }

    private func clientHears(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        switch Preamble.parseServer(bytes) {
        case .tls?: upgrade(context, tls: true)
        case .plaintext?: upgrade(context, tls: false)
        case let decision?: finish(context, .refused(remote: remote(context), theirs: nil, decision: decision))
        case nil: finish(context, .foreign(remote: remote(context), what: "a server that does not speak nearby"))
        }
    }

    private func upgrade(_ context: ChannelHandlerContext, tls useTLS: Bool) {
        let box = Locked<[UInt8]?>(nil)
        do {
            let pipeline = context.pipeline.syncOperations
            var handlers: [any ChannelHandler] = []
            if useTLS {
                let verify = SessionTLS.verifier { key in box.withLock { $0 = key } }
                handlers.append(role == .server
                    ? NIOSSLServerHandler(context: tls, customVerificationCallback: verify)
                    : try NIOSSLClientHandler(context: tls, serverHostname: nil, customVerificationCallback: verify))
            }
            let shortcut = MessageShortcut()
            handlers.append(FrameSplitter(
                phase: shortcut.phase, client: role == .client, pacing: shortcut.pacing, output: .standard,
                frames: .frames, bulk: .bulkReads, waiting: shortcut.waiting))
            handlers.append(MessageShortcutHandler(shortcut))
            handlers.append(WriteCoalescer())
            handlers.append(FrameWriter())
            try pipeline.addHandlers(handlers, position: .after(self))
            // Half-closure: finishing the writer flushes every queued frame before TLS close_notify
            // and FIN, so a goodbye never cuts off the message sent just before it.
            let channel = try NIOAsyncChannel<Frame, Frame>(
                wrappingChannelSynchronously: context.channel,
                configuration: .init(isOutboundHalfClosureEnabled: true))
            let remote = remote(context)
            done = true
            timeout?.cancel()
            var frames = FrameChannel(channel: channel, encrypted: useTLS, remote: remote, certificateKey: box, shortcut: shortcut)
            frames.started = started
            promise.succeed(.frames(frames))
            if received.readableBytes > 0 {
                context.fireChannelRead(NIOAny(received))
                received = ByteBuffer()
            }
            pipeline.removeHandler(context: context, promise: nil)
        } catch {
            finish(context, .foreign(remote: remote(context), what: "a connection that could not be set up: \(ErrorWords.describe(error))"))
        }
    }

    private func finish(_ context: ChannelHandlerContext, _ result: Negotiated) {
        guard !done else { return }
        done = true
        timeout?.cancel()
        promise.succeed(result)
        context.close(promise: nil)
    }
}

/// Opening connections and listening for them. Each connection negotiates on its own (a slow
/// or silent client never holds up the next one) and is handed over once its preamble is done.
package enum Connections {
    /// Reads of up to 256 KiB (NIO's default stops at 64 KiB): a bulk transfer costs a quarter of
    /// the read calls and TLS unwraps. For the control socket's clients (links that carry files or
    /// streams read with `bulkReads`, within `MemoryBudget.bulkReads`).
    package static let receiveBuffer = AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 65536, maximum: 256 << 10)

    /// How a connection reads: the buffer it reads into, and how many reads it makes in a row.
    /// NIO keeps up to `perCycle` buffers per connection for as long as it lives, and TLS gathers
    /// a whole cycle's plaintext in one buffer of its own that never shrinks: 4 × 256 KiB reads
    /// cost a connection about 2 MiB for good (0.7 MB measured per connection that sent one
    /// burst before its handshake ended).
    struct Reads: Sendable {
        let allocator: any RecvByteBufferAllocator
        let perCycle: UInt
    }

    /// Before the session: one read of 16 KiB (a TLS record, a handshake frame) at a time.
    static let handshakeReads = Reads(allocator: FixedSizeRecvByteBufferAllocator(capacity: 16 << 10), perCycle: 1)
    /// In a session: one read of up to 32 KiB at a time (two hundred links flooding messages hold
    /// 6 MiB of read buffers, not 50).
    static let sessionReads = Reads(
        allocator: AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 16 << 10, maximum: 32 << 10), perCycle: 1)
    /// A link carrying a file or a stream, with room in `MemoryBudget.bulkReads`: 2 reads of up to
    /// 512 KiB, the same 1 MiB a wake-up as 4 of 256 KiB, and TLS's buffer of as much. A receiver's
    /// reads of 256 KiB came back full (253 KiB on average, strace of a 1 GiB stream): the socket
    /// held more, and each read is a syscall and a pass through TLS.
    static let bulkReads = Reads(
        allocator: AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 256 << 10, maximum: 512 << 10), perCycle: 2)

    static func install(
        on channel: any Channel, role: PreambleHandler.Role, preference: EncryptionPreference, tls: NIOSSLContext
    ) -> EventLoopFuture<Negotiated> {
        let promise = channel.eventLoop.makePromise(of: Negotiated.self)
        do {
            try channel.pipeline.syncOperations.addHandler(
                PreambleHandler(role: role, preference: preference, tls: tls, promise: promise))
        } catch {
            promise.fail(error)
        }
        return promise.futureResult
    }

    /// Listens on every address (IPv6 and IPv4, or IPv4 alone where the host has no IPv6) and calls
    /// `handle` with each negotiated connection. A connection over the process's `budget`, or over
    /// the `gate`'s caps on links that are not sessions, is closed at once.
    package static func listen(
        port: Int, preference: EncryptionPreference, tls: NIOSSLContext, gate: Admission = Admission(),
        budget: ResourceBudget = .shared, handle: @escaping @Sendable (Negotiated) -> Void
    ) async throws(NearbyError) -> any Channel {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.recvAllocator, value: handshakeReads.allocator)
            .childChannelOption(.maxMessagesPerRead, value: handshakeReads.perCycle)
            .childChannelInitializer { channel in
                guard let ticket = gate.admit(channel, budget: budget) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.inappropriateOperationForState)
                }
                install(on: channel, role: .server, preference: preference, tls: tls).whenSuccess { negotiated in
                    guard case var .frames(frames) = negotiated else { return handle(negotiated) }
                    frames.admission = ticket
                    handle(.frames(frames))
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        var failure = "unknown error"
        for host in ["::", "0.0.0.0"] {
            do {
                return try await bootstrap.bind(host: host, port: port).get()
            } catch {
                failure = ErrorWords.listening(error, port: port)
            }
        }
        throw .listenFailed("cannot listen for sessions: \(failure)")
    }

    /// Connects and runs the preamble; cancelling the calling task ends the wait at once. The
    /// connection takes a place in the process's `budget` until it closes.
    /// How long a TCP connection may take to be made: 10 s, or $NEARBY_CONNECT_TIMEOUT_MS (a test knob).
    package static let connectTimeout = ProcessInfo.processInfo.environment["NEARBY_CONNECT_TIMEOUT_MS"]
        .flatMap(Int64.init).map { TimeAmount.milliseconds(max($0, 1)) } ?? .seconds(10)

    package static func connect(
        host: String, port: Int, preference: EncryptionPreference, tls: NIOSSLContext, timeout: TimeAmount = connectTimeout,
        budget: ResourceBudget = .shared
    ) async throws -> Negotiated {
        guard budget.takeConnection() else {
            throw NearbyError.connectionFailed("cannot connect to \(host):\(port): \(budget.limits.descriptors) connections and files are open, the most this process keeps")
        }
        let negotiated = Mutex<EventLoopFuture<Negotiated>?>(nil)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.recvAllocator, value: handshakeReads.allocator)
                .channelOption(.maxMessagesPerRead, value: handshakeReads.perCycle)
                .channelInitializer { channel in
                    let future = install(on: channel, role: .client, preference: preference, tls: tls)
                    negotiated.withLock { $0 = future }
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .connect(host: host, port: port).value { $0.close(promise: nil) }
        } catch {
            budget.giveConnection()
            throw error
        }
        // Given back once, by the connection that won (Happy Eyeballs may have tried several).
        channel.closeFuture.whenComplete { _ in budget.giveConnection() }
        guard let future = negotiated.withLock({ $0 }) else {
            channel.close(promise: nil)
            throw NearbyError.connectionFailed("the connection to \(host):\(port) was not set up")
        }
        do {
            return try await future.value { negotiated in
                if case let .frames(frames) = negotiated { frames.channel.channel.close(promise: nil) }
            }
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }
}
