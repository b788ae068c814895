import NIOCore
import NearbyBase
import NearbyIdentity

/// What the rest of the node asks of a link, as intentions: invite, answer, leave, become a
/// session, offer or accept a channel, send messages. Nothing outside the Link*.swift files touches
/// the link's channels, writer, transport or shortcut; each rule about them lives here once.
extension Link: ChannelPort {
    // MARK: The session

    /// Sends our invitation (the link we dialled, once the handshake is done).
    func invite(id: String, context: String?, timeout: Double, owner: some LinkOwner) async {
        await perform(step { $0.invite(id: id, context: context, timeout: timeout) }, owner: owner)
    }

    /// Answers the peer's invitation; `closing` is our reason when that ends the link.
    func answer(accept: Bool, reason: String?, closing: String, owner: some LinkOwner) async {
        await perform(step { $0.answer(accept: accept, reason: reason, closing: closing) }, owner: owner)
    }

    /// The link became a session: it no longer holds a place among links that are not sessions
    /// (`Admission`), and its messages go to `deliver` straight from the event loop.
    func becameSession(delivering deliver: @escaping @Sendable ([UInt8]) -> Void) {
        admission?.release()
        shortcut.arm { [self] bytes in
            heard()
            deliver(bytes)
        }
    }

    /// No more messages straight from the event loop (the link is leaving or gone).
    func stopDelivering() { shortcut.disarm() }

    /// Says goodbye and closes once everything queued is written. The reason is set before the
    /// goodbye goes out (a peer that closes at once must not make it "connection lost"). Bounded:
    /// the goodbye waits at most half a second for room, for a peer that stopped reading; `spawn`'s
    /// task writes it, so it is not cut short when that wait ends.
    func leave(because why: CloseReason, telling reason: String, spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void) async {
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
    func answerProbe(_ reply: FrameBody.ProbeReply) async {
        await send(FrameBody.frame(.probeReply, reply))
        await finish(because: .ended("answered a nearby doctor probe"))
    }

    // MARK: Messages

    /// Many messages in one write (`send --lines`); throws when the connection failed under it.
    func sendMessages(_ messages: [ByteBuffer]) async throws {
        try await outbound.write(Frame.batch(messages.lazy.map { Frame(kind: .message, payload: $0) }))
    }

    // MARK: The connection

    var isActive: Bool { transport.isActive }
    var localAddress: SocketAddress? { transport.localAddress }
    var remoteAddress: SocketAddress? { transport.remoteAddress }

    /// Returns once the connection is closed, or when the caller is cancelled.
    func closed() async { _ = await NearbyBase.closed(transport, within: nil) }

    // MARK: Channels

    /// The peer's offer `id` is taken by `file`: its frames go there from now on. False once the
    /// link is gone.
    func accept(_ id: UInt32, receiving file: FileReceiver) -> Bool { channels.accept(id, .receiving(file)) }

    /// Whether the peer takes small files in bundles (its hello lists `Bundle.feature`); an
    /// environment of `NEARBY_BUNDLES=0` sends each file alone (benchmarks, tests).
    var takesBundles: Bool { peer.features.contains(Bundle.feature) && FolderSender.bundling }

    /// The peer's bundle offer on `id` is taken: its files' records may flow (`BundleReceiver`).
    func accept(_ id: UInt32, bundle: BundleReceiver) -> Bool { channels.accept(id, .bundle(bundle)) }

    /// The peer's stream offer waits for a listener: its reset and the link's end reach it meanwhile.
    func hold(_ stream: StreamChannel) -> Bool { channels.hold(stream.id, .stream(stream)) }

    /// The held stream is taken by a listener: data may flow. False when it is no longer held.
    func accept(_ stream: StreamChannel) -> Bool {
        channels.holds(stream.id, stream) && channels.accept(stream.id, .stream(stream))
    }

    /// Whether `stream` still waits on this link (not reset, the link not gone).
    func holds(_ stream: StreamChannel) -> Bool { channels.holds(stream.id, stream) }

    /// A channel of ours for a file or directory we send, and our `open` on it, in one step.
    func openSending(offering open: FrameBody.Open, results: Bool = false) throws(NearbyError) -> OutgoingChannel {
        try openOffering(open) { id in
            let channel = OutgoingChannel(id: id, results: results)
            return (.sending(channel), channel)
        }
    }

    /// A new channel of ours, with `open` written on it before the next channel can be numbered:
    /// the peer takes only a number higher than any before (`ChannelMux`), and tasks that offer at
    /// once (a folder's files) would otherwise race between numbering and writing. The write is
    /// queued on the connection's event loop inside the channel table's lock — always queued, never
    /// run in place, so the queue's order is the numbers' order.
    func openOffering<Made: Sendable>(_ open: FrameBody.Open, _ make: (UInt32) -> (LinkChannels.End, Made)) throws(NearbyError) -> Made {
        let transport = transport
        return try openChannel { id in
            let frame = FrameBody.frame(.open, open, channel: id)
            transport.eventLoop.execute { transport.writeAndFlush(frame, promise: nil) }
            return make(id)
        }
    }

    /// Offers the peer a stream named `name` and waits for its answer: the stream, once accepted.
    /// The caller ends its channel (`endChannel`) when it is over.
    func offerStream(name: String) async throws(NearbyError) -> StreamChannel {
        let stream = try openOffering(FrameBody.Open(kind: .stream, path: name, size: 0, key: "")) { [peer] id in
            let stream = StreamChannel(id: id, name: name, peer: peer.ref)
            return (.stream(stream), stream)
        }
        var replies = stream.replies.makeAsyncIterator()
        guard let reply = await replies.next() else {
            endChannel(stream.id)
            throw .connectionFailed("the session ended before the peer answered")
        }
        guard reply.accept else {
            endChannel(stream.id)
            throw .transferFailed(path: name.isEmpty ? "stream" : name, code: "stream-refused", reason: reply.reason ?? "refused")
        }
        return stream
    }

    /// Takes the peer's held stream and says yes: data may flow. False when it is no longer held
    /// (reset, the link gone).
    func acceptStream(_ stream: StreamChannel) async -> Bool {
        guard accept(stream) else { return false }
        await send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: stream.id))
        return true
    }

    /// Offers the peer `file` on a channel of its own and sends it (`FileSender`), to its end.
    func offerFile(
        _ file: OutgoingFile, sender: PeerID, sink: any EventSink, batch: Events.Progress.Batch?, permits: StartPermits? = nil
    ) async throws(NearbyError) {
        try await FileSender.send(
            file, opening: { (open: FrameBody.Open) throws(NearbyError) -> OutgoingChannel in try openSending(offering: open) },
            link: self, sender: sender, sink: sink, batch: batch, permits: permits)
    }

    /// Asks the peer to make the empty `directory` (`DirectorySender`).
    func offerDirectory(_ directory: OutgoingFile, sink: any EventSink) async throws(NearbyError) {
        let channel = try openSending(offering: DirectorySender.offer(directory))
        defer { endChannel(channel.id) }
        try await DirectorySender.make(directory, over: channel, link: self, sink: sink)
    }

    /// The channel is over (done, refused, reset): later frames on it are ignored.
    func endChannel(_ id: UInt32) { channels.finish(id) }

    /// Refuses the peer's offer on `id`: nothing was made for it.
    func refuse(_ id: UInt32, _ reply: FrameBody.OpenReply) async {
        channels.finish(id)
        await send(FrameBody.frame(.openReply, reply, channel: id))
    }
}
