import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import NearbyBase

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
