import NearbyBase
import NearbyIdentity
import NearbyWire

/// The node's sessions: every link that proved its identity, the one in session with each peer,
/// and what is said when a session begins or ends — `connected` (made here alone: its init is
/// this file's), `disconnected`, and the commands watching (`Node.sessionChanges`). The node tells
/// it when a link attaches, connects and detaches; the owners (`InvitationDesk`,
/// `StreamMatchmaker`, `Resumer`) read it and tell a command's client through it, and never see the
/// node. It lives on the node, as its owners do: what it holds is the node's, touched only there.
final class Sessions {
    /// Every authenticated link, in session or not: a stranger's deadline, the goodbyes at stop.
    private(set) var links: Set<Link> = []
    private var byPeer: [PeerID: Link] = [:]
    private var watchers = SessionWatchers()
    private let events: any EventSink
    private let knownPeers: KnownPeers
    /// Runs work as a child of the node (a goodbye's write).
    private let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void

    init(events: any EventSink, knownPeers: KnownPeers, spawn: @escaping @Sendable (@escaping @Sendable () async -> Void) -> Void) {
        self.events = events
        self.knownPeers = knownPeers
        self.spawn = spawn
    }

    var count: Int { byPeer.count }
    /// Every session, one per peer.
    var all: [Link] { Array(byPeer.values) }
    /// The session with `peer`.
    subscript(peer: PeerID) -> Link? { byPeer[peer] }
    /// Whether `link` is still one of the node's (not detached).
    func holds(_ link: Link) -> Bool { links.contains(link) }

    // MARK: What the node tells it

    func attached(_ link: Link) { links.insert(link) }

    /// The session on `link` began: its peer pinned (false, and the link closed, when that fails),
    /// an older session with the peer replaced, `connected` said to the node's events.
    func began(_ link: Link) -> Bool {
        guard link.pin(in: knownPeers, events: events) else { return false }
        if let previous = byPeer[link.peer.id], previous !== link {
            byPeer[link.peer.id] = nil
            previous.close(because: .ended("replaced by a new connection"))
        }
        byPeer[link.peer.id] = link
        tell(events, about: link)
        watchers.notify(.connected(link.peer.id))
        return true
    }

    /// `link` is gone (`reason`): forgotten, and when it was its peer's session, `disconnected` said.
    func detached(_ link: Link, reason: String) {
        links.remove(link)
        guard byPeer[link.peer.id] === link else { return }
        byPeer[link.peer.id] = nil
        events.emit(Events.Disconnected(peer: link.peer.ref, reason: reason, peers: count))
        watchers.notify(.disconnected(link.peer.id, remaining: count))
    }

    /// Session changes, for commands that stay "until the peer leaves".
    func watch() -> AsyncStream<Node.SessionChange> { watchers.watch() }

    // MARK: What the owners ask

    /// Says `connected` for the session on `link` to `sink` (a command's client, or the node's
    /// events when it began), and returns its peer.
    @discardableResult
    func tell(_ sink: (any EventSink)?, about link: Link) -> AuthenticatedPeer {
        sink?.emit(Events.Connected(link.peer, peers: count))
        return link.peer
    }

    /// The peer of the session with `peer`, told to `client` as `connected`; nil when there is none.
    @discardableResult
    func reached(_ peer: PeerID, telling client: (any EventSink)?) -> AuthenticatedPeer? {
        byPeer[peer].map { tell(client, about: $0) }
    }

    /// The sessions `query` names that are not closing (`disconnect` returns before one is gone).
    func live(matching query: String) -> [Link] {
        byPeer.values.filter { Node.matches(query, $0.peer) && !$0.isClosing }
    }

    /// The session with the peer at `address` (HOST:PORT).
    func at(address: String) -> Link? { byPeer.values.first { $0.peer.address == address } }

    /// Whether any link, in session or not, is with a peer `query` names.
    func anyLink(matching query: String) -> Bool { links.contains { Node.matches(query, $0.peer) } }

    /// The peer's other links that are not its session: those `link` replaced, still closing.
    func older(than link: Link) -> [Link] {
        links.filter { $0 !== link && $0.peer.id == link.peer.id && byPeer[link.peer.id] !== $0 }
    }

    /// Says goodbye on a link of ours and closes it once everything queued is written. Bounded: the
    /// goodbye waits at most half a second for room, for a peer that stopped reading.
    nonisolated(nonsending) func leave(_ link: Link, because why: CloseReason, telling reason: String) async {
        guard links.contains(link) else { return }
        await link.leave(because: why, telling: reason, spawn: spawn)
    }
}

extension Events.Connected {
    /// The `connected` event of a session with `peer`, one of `peers` sessions: made only by
    /// `Sessions.tell`, so what a command hears when a session is there is said in one place.
    fileprivate init(_ peer: AuthenticatedPeer, peers: Int) {
        self.init(peer: peer.ref, address: peer.address, verificationCode: peer.verificationCode, encrypted: peer.encrypted, peers: peers)
    }
}
