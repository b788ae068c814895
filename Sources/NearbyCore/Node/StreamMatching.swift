import NearbyBase
import NearbyDiscovery
/// Which incoming stream goes to which `nearby stream --listen`, as `SessionStateMachine` does it:
/// events in (a stream offered, a listener come or gone, a wait over), actions out. Pure: streams
/// and listeners are keys with what matching needs of them; `StreamMatchmaker` keeps what they
/// stand for and carries the actions out. Tested without sockets (`StreamMatchmakerTests`).
struct StreamMatching {
    /// An incoming stream: its name, and the peer it came from.
    struct Stream: Equatable {
        let key: Int
        let name: String
        let peerID: String
        let peerName: String
    }

    /// A listener: the stream name it wants and the peer it wants it from (nil: any).
    struct Listener: Equatable {
        let key: Int
        let name: String?
        let from: String?
    }

    enum Action: Equatable {
        /// The stream goes to the listener.
        case give(stream: Int, to: Int)
        /// The stream waits for a listener; after `refuseAfter`, `expired` says whether to refuse it.
        case hold(stream: Int, refuseAfter: Duration)
        /// Refuse the stream with `reason`: nothing flows, nothing was made for it.
        case refuse(stream: Int, reason: String)
        /// The listener waits for a stream.
        case wait(listener: Int)
    }

    /// Incoming streams waiting for a listener at once, over all links; more are refused.
    let maxWaiting: Int
    /// How long an incoming stream waits for a listener before it is refused.
    let listenerWait: Duration
    /// Streams waiting for a listener, oldest first.
    private(set) var waiting: [Stream] = []
    /// Listeners waiting for a stream, oldest first.
    private(set) var listeners: [Listener] = []

    init(maxWaiting: Int, listenerWait: Duration) {
        self.maxWaiting = maxWaiting
        self.listenerWait = listenerWait
    }

    /// A stream came: to the oldest listener that wants it, else it waits (bounded in number and time).
    mutating func offered(_ stream: Stream) -> Action {
        if let index = listeners.firstIndex(where: { Self.wants($0, stream) }) {
            return .give(stream: stream.key, to: listeners.remove(at: index).key)
        }
        guard waiting.count < maxWaiting else {
            return .refuse(stream: stream.key, reason: "too many streams waiting for a listener (at most \(maxWaiting))")
        }
        waiting.append(stream)
        return .hold(stream: stream.key, refuseAfter: listenerWait)
    }

    /// A listener came: it takes the oldest waiting stream it wants, else it waits.
    mutating func listening(_ listener: Listener) -> Action {
        if let index = waiting.firstIndex(where: { Self.wants(listener, $0) }) {
            return .give(stream: waiting.remove(at: index).key, to: listener.key)
        }
        listeners.append(listener)
        return .wait(listener: listener.key)
    }

    /// A listener stopped waiting (it got its stream, or its client left).
    mutating func listenerLeft(_ key: Int) { listeners.removeAll { $0.key == key } }

    /// The stream's wait is over: refused, unless a listener took it meanwhile.
    mutating func expired(_ key: Int) -> Action? {
        guard let index = waiting.firstIndex(where: { $0.key == key }) else { return nil }
        let stream = waiting.remove(at: index)
        let label = stream.name.isEmpty ? "" : " named '\(stream.name)'"
        return .refuse(
            stream: key,
            reason: "nobody is listening for streams\(label) (\(Spelling.command(.streamListen))); waited \(listenerWait.components.seconds) s")
    }

    /// Streams nobody needs to answer any more (their link closed): forgotten.
    mutating func drop(_ keys: Set<Int>) { waiting.removeAll { keys.contains($0.key) } }

    static func wants(_ listener: Listener, _ stream: Stream) -> Bool {
        (listener.name == nil || listener.name == stream.name) && wants(listener.from, peerID: stream.peerID, name: stream.peerName)
    }

    /// Whether a listener for streams `from` (nil: anyone) wants one from this peer.
    static func wants(_ from: String?, peerID: String, name: String) -> Bool {
        from.map { PeerQuery.matches($0, id: peerID, name: name) } ?? true
    }
}
