import Foundation
import NIOCore
import Synchronization
import NearbyBase

extension Node {
    /// How long an incoming stream waits for a `nearby stream --listen` before it is refused.
    var listenerWait: Duration { configuration.unclaimedStreamWait }
    /// Incoming streams waiting for a listener at once, over all links; more are refused.
    static let maxUnclaimedStreams = 8

    // MARK: Opening

    /// Opens a stream to a peer (inviting it first if needed) and runs it until both directions end.
    package func openStream(
        to query: String, name: String, timeout: Double, source: any ByteSource, sink: any ByteSink,
        client: (any EventSink)?, ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
        let stream = try await link.offerStream(name: name)
        defer { link.endChannel(stream.id) }
        events.emit(Events.StreamOpened(stream: "\(stream.id)", direction: "out", peer: peer.ref, name: name))
        await ready(StreamInfo(stream: "\(stream.id)", peer: peer.ref, name: name))
        return try await StreamPump(stream: stream, link: link, events: events).run(source: source, sink: sink)
    }

    /// Waits for an incoming stream (named `name`, from `from`, when given) and runs it.
    package func listenForStream(
        name: String?, from: String?, source: any ByteSource, sink: any ByteSink, client: (any EventSink)?,
        ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        var found = streamWaits.takePending(name: name, from: from)
        if found == nil {
            let listener = StreamListener(name: name, from: from, sink: client)
            streamWaits.listeners.append(listener)
            let service = configuration.service.name
            let what = (name.map { "stream '\($0)'" } ?? "stream") + (from.map { " from \($0)" } ?? "")
            client?.emit(Events.Waiting(for: "stream", service: service, reason: "waiting for a \(what) on \(service) (Ctrl-C to stop)"))
            // A stream comes only once its opener is in session: show the invitations that wait
            // for an answer, with how to give it.
            for pending in invitations.waiting where listener.wants(pending.link.peer) {
                client?.emit(pending.event)
            }
            found = await listener.claimed.wait()
            streamWaits.listeners.removeAll { $0.id == listener.id }
        }
        guard let match = found else {
            if stopping { throw .connectionFailed("the node stopped") }
            throw .cancelled("waiting for a stream")
        }
        let (stream, link) = (match.stream, match.link)
        if Task.isCancelled {
            // Our client left just as the stream came: it goes to another listener, or waits.
            if link.holds(stream) { await place(stream, on: link) }
            throw .cancelled("waiting for a stream")
        }
        defer { link.endChannel(stream.id) }
        guard await link.acceptStream(stream) else {
            throw .connectionFailed("the stream's session ended before it could start")
        }
        events.emit(Events.StreamOpened(stream: "\(stream.id)", direction: "in", peer: stream.peer, name: stream.name))
        await ready(StreamInfo(stream: "\(stream.id)", peer: stream.peer, name: stream.name))
        return try await StreamPump(stream: stream, link: link, events: events).run(source: source, sink: sink)
    }

    // MARK: Incoming

    func streamOffered(_ offer: FrameBody.Open, channel: UInt32, on link: Link) async {
        let stream = StreamChannel(id: channel, name: String(offer.path.prefix(255)), peer: link.peer.ref)
        // From now on its reset and the link's end reach it, waiting or running.
        guard link.hold(stream) else { return }
        await place(stream, on: link)
    }

    /// Gives an incoming stream to a listener that wants it, else lets it wait for one.
    private func place(_ stream: StreamChannel, on link: Link) async {
        if streamWaits.giveListener(StreamMatch(stream: stream, link: link)) { return }
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

    /// Refuses a stream offer: nothing was made for it.
    nonisolated func refuse(_ channel: UInt32, on link: Link, reason: String) async {
        await link.refuse(channel, FrameBody.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason))
    }
}
