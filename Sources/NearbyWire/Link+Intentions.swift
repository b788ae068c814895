import NIOCore
import NearbyBase
import NearbyIdentity

/// What the rest of the node asks of a link, as intentions: invite, answer, leave, become a
/// session, offer or accept a channel, send messages. Nothing outside the Link*.swift files touches
/// the link's channels, writer, transport or shortcut; each rule about them lives here once.
extension Link: ChannelPort {
    // MARK: The session

    /// Sends our invitation (the link we dialled, once the handshake is done).
    package func invite(id: String, context: String?, timeout: Double, offer: Offer? = nil) async {
        await perform(step { $0.invite(id: id, context: context, timeout: timeout, offer: offer) }, owner: owner)
    }

    /// Answers the peer's invitation; `closing` is our reason when that ends the link.
    package func answer(accept: Bool, reason: String?, closing: String) async {
        await perform(step { $0.answer(accept: accept, reason: reason, closing: closing) }, owner: owner)
    }

    /// The link became a session: it no longer holds a place among links that are not sessions
    /// (`Admission`), and its messages go to `deliver` straight from the event loop.
    package func becameSession(delivering deliver: @escaping @Sendable ([UInt8]) -> Void) {
        admission?.release()
        shortcut.arm { [self] bytes in
            heard()
            deliver(bytes)
        }
    }

    /// No more messages straight from the event loop (the link is leaving or gone).
    package func stopDelivering() { shortcut.disarm() }

    /// Says goodbye and closes once everything queued is written. The reason is set before the
    /// goodbye goes out (a peer that closes at once must not make it "connection lost"). Bounded:
    /// the goodbye waits at most half a second for room, for a peer that stopped reading; `spawn`'s
    /// task writes it, so it is not cut short when that wait ends.
    package func leave(because why: CloseReason, telling reason: String, spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void) async {
        setReason(why)
        let actions = step { $0.leave(telling: reason) }
        shortcut.disarm()
        for case let .send(frame) in actions {
            let sent = OneShot<Void>()
            spawn {
                await self.send(frame)
                sent.settle(())
            }
            _ = await sent.wait(until: .now + .milliseconds(500))
        }
        await finish(because: why)
    }

    /// Sends the answer to `nearby doctor`'s probe and closes: a probed link never becomes a session.
    package func answerProbe(_ reply: FrameBody.ProbeReply) async {
        await send(FrameBody.frame(.probeReply, reply))
        await finish(because: .ended("answered a nearby doctor probe"))
    }

    // MARK: Messages

    /// Many messages in one write (`send --lines`); throws when the connection failed under it.
    package func sendMessages(_ messages: [ByteBuffer]) async throws {
        try await outbound.write(Frame.batch(messages.lazy.map { Frame(kind: .message, payload: $0) }))
    }

    // MARK: The connection

    package var isActive: Bool { transport.isActive }
    var localAddress: SocketAddress? { transport.localAddress }
    var remoteAddress: SocketAddress? { transport.remoteAddress }

    /// Returns once the connection is closed, or when the caller is cancelled.
    package func closed() async { _ = await NearbyBase.closed(transport, within: nil) }

    // MARK: Channels

    /// The peer's offer `id` is taken by `end`: its frames go there from now on. False once the
    /// link is gone.
    package func accept(_ id: UInt32, _ end: any ChannelEnd) -> Bool { channels.accept(id, end) }

    /// The peer's offer `id` waits (a stream for a listener): its reset and the link's end reach
    /// `end` meanwhile.
    package func hold(_ id: UInt32, _ end: any ChannelEnd) -> Bool { channels.hold(id, end) }

    /// Whether `end` still runs on `id` (not reset, the link not gone).
    package func holds(_ id: UInt32, _ end: any ChannelEnd) -> Bool { channels.holds(id, end) }

    /// A new channel of ours, with `open` written on it before the next channel can be numbered:
    /// the peer takes only a number higher than any before (`ChannelMux`), and tasks that offer at
    /// once (a folder's files) would otherwise race between numbering and writing. The write is
    /// queued on the connection's event loop inside the channel table's lock — always queued, never
    /// run in place, so the queue's order is the numbers' order.
    package func openOffering<Made: Sendable>(_ open: FrameBody.Open, _ make: (UInt32) -> (any ChannelEnd, Made)) throws(NearbyError) -> Made {
        let transport = transport
        return try openChannel { id in
            let frame = FrameBody.frame(.open, open, channel: id)
            transport.eventLoop.execute { transport.writeAndFlush(frame, promise: nil) }
            return make(id)
        }
    }

    /// The channel is over (done, refused, reset): later frames on it are ignored.
    package func endChannel(_ id: UInt32) { channels.finish(id) }

    /// Tells the peer its offer on `id` is held, not answered yet: `reason`, held `waiting` seconds
    /// (`OpenReply.waiting`).
    package func notYet(_ id: UInt32, reason: String, waiting: UInt64) async {
        await send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: false, offset: 0, reason: reason, waiting: waiting), channel: id))
    }

    /// Refuses the peer's offer on `id` for `reason` (with `code`, when programs should know why):
    /// nothing was made for it.
    package func refuse(_ id: UInt32, reason: String, code: TransferCode? = nil) async {
        channels.finish(id)
        await send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason, code: code), channel: id))
    }

    /// Takes the peer's offer on `id` and says yes, from the start: data may flow.
    package func agree(_ id: UInt32) async {
        await send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: id))
    }
}
