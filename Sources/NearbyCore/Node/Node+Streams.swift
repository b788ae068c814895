import Foundation
import NIOCore
import Synchronization

/// One stream: bytes both ways on one channel, each direction with its own window, `close` as a
/// half-close.
final class StreamChannel: Sendable {
    enum Inbound: Sendable {
        case data(ByteBuffer)
        case end
        case reset(StreamLife.Cause)
    }

    let id: UInt32
    let name: String
    let peer: PeerRef
    let replies: AsyncStream<Control.OpenReply>
    let replyContinuation: AsyncStream<Control.OpenReply>.Continuation
    /// What the peer lets us send, summed however many window frames it sends.
    let credit = CreditGate(initial: Transfer.window)
    /// Bounded by our window: the peer may not send more than we granted.
    let inbound: AsyncStream<Inbound>
    let inboundContinuation: AsyncStream<Inbound>.Continuation
    /// Open, half-closed, done or cut — and why, the first cause winning.
    let life = Mutex(StreamLife())

    init(id: UInt32, name: String, peer: PeerRef) {
        self.id = id
        self.name = name
        self.peer = peer
        (replies, replyContinuation) = AsyncStream<Control.OpenReply>.makeStream()
        (inbound, inboundContinuation) = AsyncStream<Inbound>.makeStream()
    }

    /// "the stream" or "stream 'NAME'", for sentences.
    var label: String { name.isEmpty ? "the stream" : "stream '\(name)'" }

    /// A frame of the peer on this stream, from the link's task.
    func received(_ message: ChannelMessage) {
        switch message {
        case let .openReply(reply):
            replyContinuation.yield(reply)
        case let .data(bytes):
            // Bytes after the peer's close break the protocol: they are not the stream's.
            guard (try? life.withLock { try $0.mayRead() }) != nil else { return }
            // The payload is memory of its own (FrameSplitter): queued, it keeps no read buffer alive.
            inboundContinuation.yield(.data(bytes))
        case let .window(more):
            credit.add(Int(more))
        case .close:
            // A second close is the peer breaking the protocol; ignore it rather than end twice.
            if (try? life.withLock { try $0.receivedClose() }) != nil { inboundContinuation.yield(.end) }
        case let .reset(reset):
            // The link's table let it go already (LinkChannels.route).
            lost(.peerReset(String(reset.reason.prefix(Control.maxReasonBytes))))
        case .open, .start:
            break
        }
    }

    /// The session ended or the peer reset the stream: both directions stop at once.
    func lost(_ cause: StreamLife.Cause) {
        _ = life.withLock { $0.cut(cause) }
        inboundContinuation.yield(.reset(cause))
        inboundContinuation.finish()
        credit.close()
        replyContinuation.finish()
    }
}

/// What spans links in streams: incoming ones waiting for a listener (at most
/// `maxUnclaimedStreams`, each for at most `listenerWait`), and listeners waiting for one. A
/// running stream belongs to its link's channels.
struct StreamWaits {
    var pending: [PendingStream] = []
    var listeners: [StreamListener] = []
}

struct PendingStream {
    let stream: StreamChannel
    let link: Link
}

struct StreamListener {
    let id = UUID()
    let name: String?
    let from: String?
    /// The listener's client: it sees the invitations it may be waiting for (Node.invited).
    var sink: (any EventSink)? = nil
    let claimed = OneShot<StreamMatch>()

    func wants(_ peer: AuthenticatedPeer) -> Bool { from.map { Node.matches($0, peer) } ?? true }
}

/// An incoming stream and the link it came on, handed to the listener that takes it.
struct StreamMatch: Sendable {
    let stream: StreamChannel
    let link: Link
}

/// Bytes each way, readable after a failure too.
final class Counts: Sendable {
    private let state = Mutex<(UInt64, UInt64)>((0, 0))
    func sent(_ n: UInt64) { state.withLock { $0.0 = n } }
    func received(_ n: UInt64) { state.withLock { $0.1 = n } }
    var values: (UInt64, UInt64) { state.withLock { $0 } }
}

/// What a finished stream moved.
public struct StreamSummary: Sendable {
    public var sent: UInt64
    public var received: UInt64
}

extension Node {
    /// How long an incoming stream waits for a `nearby stream --listen` before it is refused.
    var listenerWait: Duration { configuration.unclaimedStreamWait }
    /// Incoming streams waiting for a listener at once, over all links; more are refused.
    static let maxUnclaimedStreams = 8

    // MARK: Opening

    /// Opens a stream to a peer (inviting it first if needed) and runs it until both directions end.
    public func openStream(
        to query: String, name: String, timeout: Double, source: any ByteSource, sink: any ByteSink,
        client: (any EventSink)?, ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
        let stream = try link.openChannel { id in
            let stream = StreamChannel(id: id, name: name, peer: peer.ref)
            return (.stream(stream), stream)
        }
        defer { link.channels.finish(stream.id) }
        await link.send(Control.frame(.open, Control.Open(kind: .stream, path: name, size: 0, key: ""), channel: stream.id))
        var replies = stream.replies.makeAsyncIterator()
        guard let reply = await replies.next() else { throw .connectionFailed("the session ended before the peer answered") }
        guard reply.accept else { throw .transferFailed(path: name.isEmpty ? "stream" : name, code: "stream-refused", reason: reply.reason ?? "refused") }
        events.emit(Events.StreamOpened(stream: "\(stream.id)", direction: "out", peer: peer.ref, name: name))
        await ready(StreamInfo(stream: "\(stream.id)", peer: peer.ref, name: name))
        return try await Self.pump(stream, link: link, source: source, sink: sink, events: events)
    }

    /// Waits for an incoming stream (named `name`, from `from`, when given) and runs it.
    public func listenForStream(
        name: String?, from: String?, source: any ByteSource, sink: any ByteSink, client: (any EventSink)?,
        ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        let match: StreamMatch?
        if let index = streamWaits.pending.firstIndex(where: { Self.wants(name, from, $0.stream, $0.link) }) {
            let pending = streamWaits.pending.remove(at: index)
            match = StreamMatch(stream: pending.stream, link: pending.link)
        } else {
            let listener = StreamListener(name: name, from: from, sink: client)
            streamWaits.listeners.append(listener)
            let service = configuration.service.name
            let what = (name.map { "stream '\($0)'" } ?? "stream") + (from.map { " from \($0)" } ?? "")
            client?.emit(Events.Waiting(for: "stream", service: service, reason: "waiting for a \(what) on \(service) (Ctrl-C to stop)"))
            // A stream comes only once its opener is in session: show the invitations that wait
            // for an answer, with how to give it.
            for pending in invitations.waiting where listener.wants(pending.link.peer) {
                client?.emit(invitationEvent(pending))
            }
            match = await listener.claimed.wait()
            streamWaits.listeners.removeAll { $0.id == listener.id }
        }
        guard let match else {
            if stopping { throw .connectionFailed("the node stopped") }
            throw .cancelled("waiting for a stream")
        }
        let (stream, link) = (match.stream, match.link)
        if Task.isCancelled {
            // Our client left just as the stream came: it goes to another listener, or waits.
            if link.channels.holds(stream.id, stream) { await place(stream, on: link) }
            throw .cancelled("waiting for a stream")
        }
        defer { link.channels.finish(stream.id) }
        guard link.channels.holds(stream.id, stream), link.channels.accept(stream.id, .stream(stream)) else {
            throw .connectionFailed("the stream's session ended before it could start")
        }
        await link.send(Control.frame(.openReply, Control.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: stream.id))
        events.emit(Events.StreamOpened(stream: "\(stream.id)", direction: "in", peer: stream.peer, name: stream.name))
        await ready(StreamInfo(stream: "\(stream.id)", peer: stream.peer, name: stream.name))
        return try await Self.pump(stream, link: link, source: source, sink: sink, events: events)
    }

    static func wants(_ name: String?, _ from: String?, _ stream: StreamChannel, _ link: Link) -> Bool {
        (name == nil || name == stream.name) && (from.map { matches($0, link.peer) } ?? true)
    }

    // MARK: Incoming

    func streamOffered(_ offer: Control.Open, channel: UInt32, on link: Link) async {
        let stream = StreamChannel(id: channel, name: String(offer.path.prefix(255)), peer: link.peer.ref)
        // From now on its reset and the link's end reach it, waiting or running.
        guard link.channels.hold(channel, .stream(stream)) else { return }
        await place(stream, on: link)
    }

    /// Gives an incoming stream to a listener that wants it, else lets it wait for one.
    private func place(_ stream: StreamChannel, on link: Link) async {
        // A listener whose client left has abandoned its wait: never give it a stream.
        streamWaits.listeners.removeAll { $0.claimed.isSettled }
        if let index = streamWaits.listeners.firstIndex(where: { Self.wants($0.name, $0.from, stream, link) }) {
            if streamWaits.listeners.remove(at: index).claimed.settle(StreamMatch(stream: stream, link: link)) { return }
        }
        // Nobody listens yet: wait a bounded time for `nearby stream --listen`, then refuse. Nothing
        // flows before a listener takes it, and only so many may wait.
        guard streamWaits.pending.count < Self.maxUnclaimedStreams else {
            await refuse(stream.id, on: link, reason: "too many streams waiting for a listener (at most \(Self.maxUnclaimedStreams))")
            return
        }
        streamWaits.pending.append(PendingStream(stream: stream, link: link))
        spawn { [self] in
            do { try await Task.sleep(for: listenerWait) } catch { return }
            await refuseUnclaimed(stream)
        }
    }

    private func refuseUnclaimed(_ stream: StreamChannel) async {
        guard let index = streamWaits.pending.firstIndex(where: { $0.stream === stream }) else { return }
        let pending = streamWaits.pending.remove(at: index)
        let label = pending.stream.name.isEmpty ? "" : " named '\(pending.stream.name)'"
        await refuse(pending.stream.id, on: pending.link,
            reason: "nobody is listening for streams\(label) (\(Spelling.command(.streamListen))); waited \(listenerWait.components.seconds) s")
    }

    /// Ends every listener (the node stops).
    func endStreamListeners() {
        for listener in streamWaits.listeners { listener.claimed.abandon() }
        streamWaits.listeners = []
    }

    // MARK: Pumping

    /// Runs both directions until each has ended: our bytes out within the peer's window, the peer's
    /// bytes in, granting window as the sink takes them. Done only when both directions ended (our
    /// `close` sent, the peer's received); anything else cuts the stream, reported by its first cause
    /// (`StreamLife`), and the peer gets a reset.
    nonisolated static func pump(
        _ stream: StreamChannel, link: Link, source: any ByteSource, sink: any ByteSink, events: any EventSink
    ) async throws(NearbyError) -> StreamSummary {
        let counts = Counts()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var sent: UInt64 = 0
                    defer { counts.sent(sent) }
                    while var chunk = try await source.next() {
                        while chunk.readableBytes > 0 {
                            guard let count = await stream.credit.take(upTo: min(chunk.readableBytes, Transfer.chunk)) else {
                                throw stream.life.withLock { $0.cause } ?? (Task.isCancelled ? .cancelled : .sessionEnded("the stream's window closed"))
                            }
                            guard let piece = chunk.readSlice(length: count) else { break }
                            await link.send(Frame(kind: .data, channel: stream.id, payload: piece))
                            sent += UInt64(count)
                        }
                    }
                    try stream.life.withLock { try $0.sentClose() }
                    await link.send(Control.frame(.close, Control.Close(sha256: "", bytes: sent), channel: stream.id))
                }
                group.addTask {
                    var received: UInt64 = 0
                    defer { counts.received(received) }
                    for await item in stream.inbound {
                        switch item {
                        case let .data(buffer):
                            try await sink.write(buffer)
                            received += UInt64(buffer.readableBytes)
                            await link.consumed(buffer.readableBytes, on: stream.id)
                        case .end:
                            await sink.finish()
                            return
                        case let .reset(cause):
                            throw cause
                        }
                    }
                    // Ended by our own cancellation (the other direction failed first): that failure
                    // is the cause, not an end of the session.
                    throw stream.life.withLock { $0.cause } ?? (Task.isCancelled ? .cancelled : .sessionEnded("the stream ended without the peer closing it"))
                }
                try await group.waitForAll()
            }
        } catch {
            // The first cause wins: a session that ended shows as that, not as the window it closed.
            let mine = error as? StreamLife.Cause ?? StreamLife.Cause(error)
            let cause = stream.life.withLock { life in life.cut(mine) ? mine : life.cause ?? mine }
            let failure = cause.error(label: stream.label)
            await sink.finish()
            // The peer learns why, unless it was the one to end it (a reset). A session that ended
            // gets one too: if it is still there after all, the peer's end must not wait forever.
            let reset: Control.Reset? = switch cause {
            case let .failed(code, reason): Control.Reset(reason: "the other side failed: \(reason)", code: TransferCode(code))
            case .cancelled: Control.Reset(reason: "the other side was interrupted", code: .cancelled)
            case let .sessionEnded(reason): Control.Reset(reason: "the other side's stream ended: \(reason)", code: .connectionLost)
            case .peerReset: nil
            }
            if let reset { await Task { await link.send(Control.frame(.reset, reset, channel: stream.id)) }.value }
            let (sent, received) = counts.values
            events.emit(Events.StreamClosed(stream: "\(stream.id)", peer: stream.peer, name: stream.name, sent: sent, received: received, reason: failure.errorDescription ?? "failed"))
            throw failure
        }
        let (sent, received) = counts.values
        events.emit(Events.StreamClosed(stream: "\(stream.id)", peer: stream.peer, name: stream.name, sent: sent, received: received, reason: "done"))
        return StreamSummary(sent: sent, received: received)
    }
}
