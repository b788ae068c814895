import Foundation
import NIOCore
import NearbyBase
import NearbyWire
import NearbyTransfer

/// The stream matchmaker: incoming streams waiting for a `nearby stream --listen` (each with its
/// deadline), listeners waiting for one, and the two commands that run a stream. `StreamMatching`
/// decides who gets what; this keeps the streams, links and listeners its keys stand for. It runs
/// on the node (its calls run where they are called from, `nonisolated(nonsending)`), handed the
/// link a stream runs on and `NodeTasks` for its deadlines. A running stream belongs to its link's
/// channels.
final class StreamMatchmaker {
    /// Incoming streams waiting for a listener at once, over all links; more are refused.
    static let maxUnclaimedStreams = 8

    private var matching: StreamMatching
    /// The streams waiting, by key.
    private var waiting: [Int: StreamMatch] = [:]
    /// The listeners waiting, by key.
    private var listeners: [Int: StreamListener] = [:]
    private var keys = 0
    /// The node's service type, as events name it.
    private let service: String
    private let events: any EventSink
    private let tasks: NodeTasks
    /// The node is stopping: a listener that ends now ends for that.
    var stopping = false

    /// `listenerWait`: how long an incoming stream waits for a listener before it is refused.
    init(listenerWait: Duration, service: String, events: any EventSink, tasks: NodeTasks) {
        matching = StreamMatching(maxWaiting: Self.maxUnclaimedStreams, listenerWait: listenerWait)
        self.service = service
        self.events = events
        self.tasks = tasks
    }

    private func nextKey() -> Int {
        keys += 1
        return keys
    }

    // MARK: Opening

    /// Opens a stream on the session `link` (the node invited its peer first if needed) and runs it
    /// until both directions end.
    nonisolated(nonsending) func open(
        on link: Link, name: String, source: any ByteSource, sink: any ByteSink,
        client: (any EventSink)?, ready: @escaping @Sendable (StreamInfo) async -> Void
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        let (peer, service) = (link.peer, self.service)
        let stream = try await link.offerStream(name: name) { notYet in
            let seconds = notYet.waiting ?? 0
            let label = name.isEmpty ? "streams" : "a stream named '\(name)'"
            events.emit(Events.Waiting(
                for: "stream", service: service,
                reason: "no listener for \(label) on \(peer.name) yet: it holds the stream \(seconds) s for one (there: `\(Self.listenCommand(name))`)"))
        }
        defer { link.endChannel(stream.id) }
        events.emit(Events.StreamOpened(stream: "\(stream.id)", direction: "out", peer: peer.ref, name: name))
        await ready(StreamInfo(stream: "\(stream.id)", peer: peer.ref, name: name))
        return try await StreamPump(stream: stream, link: link, events: events).run(source: source, sink: sink)
    }

    /// Waits for an incoming stream (named `name`, from `from`, when given) and runs it. `showing`:
    /// the invitations waiting for an answer, shown to the listener's client when it has to wait
    /// (a stream comes only once its opener is in session).
    nonisolated(nonsending) func listen(
        name: String?, from: String?, source: any ByteSource, sink: any ByteSink, client: (any EventSink)?,
        showing pending: [Invitations.Incoming], ready: @escaping @Sendable (StreamInfo) async -> Void
    ) async throws(NearbyError) -> StreamSummary {
        let events: any EventSink = client.map { TeeSink(self.events, $0) } ?? self.events
        let key = nextKey()
        let found: StreamMatch?
        if case let .give(stream, _) = matching.listening(.init(key: key, name: name, from: from)) {
            found = waiting.removeValue(forKey: stream)
        } else {
            let listener = StreamListener(from: from, sink: client)
            listeners[key] = listener
            let what = (name.map { "stream '\($0)'" } ?? "stream") + (from.map { " from \($0)" } ?? "")
            client?.emit(Events.Waiting(for: "stream", service: service, reason: "waiting for a \(what) on \(service) (Ctrl-C to stop)"))
            // A stream comes only once its opener is in session: show the invitations that wait
            // for an answer, with how to give it.
            for pending in pending where listener.wants(pending.link.peer) {
                client?.emit(pending.event)
            }
            found = await listener.claimed.wait()
            listeners[key] = nil
            matching.listenerLeft(key)
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

    nonisolated(nonsending) func offered(_ offer: FrameBody.Open, channel: UInt32, on link: Link) async {
        let stream = StreamChannel(id: channel, name: String(offer.path.prefix(255)), peer: link.peer.ref)
        // From now on its reset and the link's end reach it, waiting or running.
        guard link.hold(stream) else { return }
        await place(stream, on: link)
    }

    /// Gives an incoming stream to a listener that wants it, else lets it wait a bounded time for
    /// one (nothing flows before a listener takes it), else refuses it.
    private nonisolated(nonsending) func place(_ stream: StreamChannel, on link: Link) async {
        // A listener whose client left has abandoned its wait: it never gets a stream.
        for (key, listener) in listeners where listener.claimed.isSettled {
            listeners[key] = nil
            matching.listenerLeft(key)
        }
        let key = nextKey()
        let match = StreamMatch(stream: stream, link: link)
        let offer = StreamMatching.Stream(key: key, name: stream.name, peerID: link.peer.id.rawValue, peerName: link.peer.name)
        while true {
            switch matching.offered(offer) {
            case let .give(_, to):
                // A listener abandoned in this very moment passes it on to the next.
                if let listener = listeners.removeValue(forKey: to), listener.claimed.settle(match) { return }
            case let .hold(_, after):
                await hold(stream, on: link, for: after)
                waiting[key] = match
                tasks.after(after, .unclaimedStream(key))
                return
            case let .refuse(_, reason):
                return await link.refuse(stream.id, reason: reason)
            case .wait:
                return
            }
        }
    }

    /// A stream nobody listens for yet, said at once on both sides: a `waiting` event here, and to
    /// an opener that takes it (`waits`) an `openReply` "not yet" with the time it is held.
    private nonisolated(nonsending) func hold(_ stream: StreamChannel, on link: Link, for grace: Duration) async {
        let seconds = Double(grace / .milliseconds(1)) / 1000
        let label = stream.name.isEmpty ? "a stream" : "the stream '\(stream.name)'"
        events.emit(Events.Waiting(
            for: "stream", service: service,
            reason: "\(link.peer.name) (\(link.peer.id.rawValue.prefix(8))) offers \(label) and nobody listens for it here: "
                + "held \(Int(seconds.rounded())) s for `\(Self.listenCommand(stream.name))`, then refused"))
        guard link.peer.features.contains(FrameBody.waitsFeature) else { return }
        await link.notYet(stream.id, reason: "no listener for \(label) yet", waiting: UInt64(max(seconds, 0).rounded(.up)))
    }

    /// The command that listens for a stream named `name` (any stream when empty).
    static func listenCommand(_ name: String) -> String {
        Spelling.command(.streamListen, name.isEmpty ? [] : ["--stream", PeerSearchReport.shellQuoted(name)])
    }

    nonisolated(nonsending) func expire(_ key: Int) async {
        guard case let .refuse(_, reason)? = matching.expired(key), let match = waiting.removeValue(forKey: key) else { return }
        await match.link.refuse(match.stream.id, reason: reason)
    }

    // MARK: What the node tells it

    /// Shows an invitation from `peer` to the listeners waiting for a stream from it.
    func show(_ invitation: Events.Invitation, to peer: AuthenticatedPeer) {
        for listener in listeners.values where !listener.claimed.isSettled && listener.wants(peer) {
            listener.sink?.emit(invitation)
        }
    }

    /// `link` closed: its streams that waited are gone with it.
    func closed(_ link: Link) {
        let gone = waiting.filter { $0.value.link === link }.keys
        matching.drop(Set(gone))
        for key in gone { waiting[key] = nil }
    }

    /// Ends every listener (the node stops).
    func stop() {
        for (key, listener) in listeners {
            listener.claimed.abandon()
            matching.listenerLeft(key)
        }
        listeners = [:]
    }
}

/// A `nearby stream --listen` waiting: what it wants is in `StreamMatching.Listener`.
struct StreamListener {
    let from: String?
    /// The listener's client: it sees the invitations it may be waiting for (`InvitationDesk.invited`).
    var sink: (any EventSink)? = nil
    let claimed = OneShot<StreamMatch>()

    func wants(_ peer: AuthenticatedPeer) -> Bool { StreamMatching.wants(from, peerID: peer.id.rawValue, name: peer.name) }
}

/// An incoming stream and the link it came on, handed to the listener that takes it.
struct StreamMatch: Sendable {
    let stream: StreamChannel
    let link: Link
}
