import Foundation
import NearbyBase
import NearbyIdentity
import NearbyWire

/// Every invitation in flight on a node, both ways, and the `nearby accept`s waiting for one. Pure
/// bookkeeping: the node decides, this remembers. Waiters are `OneShot`s, so a waiting command
/// that is cancelled (Ctrl-C, its client gone) stops waiting at once and leaves nothing behind.
struct Invitations {
    /// An invitation a peer sent us, waiting for an answer.
    struct Incoming {
        let id: String
        let link: Link
        let context: String?
        var offer: Offer? = nil
        let expires: Date
        /// Arrival order: `nearby accept` without a peer takes the oldest.
        let sequence: Int
    }

    /// Our invitation to a peer: what its answer settles.
    final class Outgoing: Sendable {
        let id: String
        let context: String?
        let offer: Offer?
        let timeout: Double
        let outcome = OneShot<Outcome>()
        private let current = Locked<Link?>(nil)

        init(id: String, context: String?, offer: Offer? = nil, timeout: Double) {
            self.id = id
            self.context = context
            self.offer = offer
            self.timeout = timeout
        }

        /// The connection the invitation went out on, once the handshake is done.
        var link: Link? {
            get { current.withLock { $0 } }
            set { current.withLock { $0 = newValue } }
        }

        var isWaiting: Bool { !outcome.isSettled }
    }

    enum Outcome: Sendable {
        case connected(AuthenticatedPeer)
        case declined(String)
        case failed(NearbyError)
    }

    /// A `nearby accept` waiting for the next invitation that matches.
    struct AcceptWaiter {
        let id = UUID()
        let query: String?
        let decline: Bool
        let sink: any EventSink
        let answered = OneShot<Answer>()

        enum Answer: Sendable {
            /// The peer now in session; nil when the waiter declined.
            case answered(AuthenticatedPeer?)
            case nodeStopped
        }

        /// Waits for the invitation (until `timeout` seconds, when given): the peer now in session,
        /// nil when this waiter declined it. Throws when the node stops, the time is up or the
        /// calling task is cancelled (Ctrl-C, the client went away), which ends the wait at once.
        func answer(timeout: Double?) async throws(NearbyError) -> AuthenticatedPeer? {
            let deadline = timeout.map { ContinuousClock.now + .seconds($0) }
            let answer = if let deadline { await answered.wait(until: deadline) } else { await answered.wait() }
            switch answer {
            case let .answered(peer)?: return peer
            case .nodeStopped?: throw .connectionFailed("the node stopped")
            case nil:
                if let timeout, let deadline, !Task.isCancelled, ContinuousClock.now >= deadline {
                    throw .noInvitation(from: query, seconds: timeout)
                }
                throw .cancelled("waiting for an invitation")
            }
        }
    }

    private(set) var incoming: [String: Incoming] = [:]
    /// The invitations waiting for an answer, oldest first.
    var waiting: [Incoming] { incoming.values.sorted { $0.sequence < $1.sequence } }
    private var arrivals = 0
    var outgoing: [PeerID: Outgoing] = [:]
    private(set) var waiters: [AcceptWaiter] = []

    // MARK: Incoming

    @discardableResult
    mutating func received(id: String, link: Link, context: String?, offer: Offer? = nil, expires: Date) -> Incoming {
        arrivals += 1
        let invitation = Incoming(id: id, link: link, context: context, offer: offer, expires: expires, sequence: arrivals)
        incoming[id] = invitation
        return invitation
    }

    mutating func take(_ id: String) -> Incoming? { incoming.removeValue(forKey: id) }

    /// Pending invitations that match `query` (nil: any), oldest first. A peer (ID prefix or name)
    /// first; an invitation ID only when no pending invitation's peer matches and `namesAPeer` says
    /// the query names no peer this node knows: the inviter chooses its invitation's ID, and one
    /// equal to a friend's ID or name must never make `nearby accept <friend>` accept a stranger.
    func pending(matching query: String?, namesAPeer: (String) -> Bool = { _ in false }) -> [Incoming] {
        let all = incoming.values.sorted { $0.sequence < $1.sequence }
        guard let query else { return all }
        return Self.select(all, query: query, id: \.id, fromPeer: { Node.matches(query, $0.link.peer) }, namesAPeer: namesAPeer)
    }

    /// The rule of `pending(matching:)`, on any list (tests): those from a peer `query` names;
    /// else, unless the query names a known peer, those whose ID is the query.
    static func select<Item>(
        _ all: [Item], query: String, id: KeyPath<Item, String>, fromPeer: (Item) -> Bool, namesAPeer: (String) -> Bool
    ) -> [Item] {
        let byPeer = all.filter(fromPeer)
        guard byPeer.isEmpty else { return byPeer }
        guard !namesAPeer(query) else { return [] }
        return all.filter { $0[keyPath: id] == query }
    }

    func pending(from peer: PeerID) -> Incoming? {
        incoming.values.filter { $0.link.peer.id == peer }.min { $0.sequence < $1.sequence }
    }

    /// Forgets the invitations that came on `link` (it closed); returns them.
    mutating func withdraw(on link: Link) -> [Incoming] {
        let gone = incoming.values.filter { $0.link === link }
        for invitation in gone { incoming[invitation.id] = nil }
        return gone.sorted { $0.sequence < $1.sequence }
    }

    // MARK: Outgoing

    mutating func forget(_ invitation: Outgoing) {
        outgoing = outgoing.filter { $0.value !== invitation }
    }

    // MARK: Waiting `accept`s

    mutating func wait(_ waiter: AcceptWaiter) { waiters.append(waiter) }

    mutating func removeWaiter(_ id: UUID) { waiters.removeAll { $0.id == id } }

    /// The first waiter still waiting that wants an invitation from `peer`, taken off the list.
    /// Waiters that gave up (cancelled) are dropped on the way.
    mutating func takeWaiter(for peer: AuthenticatedPeer) -> AcceptWaiter? {
        waiters.removeAll { $0.answered.isSettled }
        guard let index = waiters.firstIndex(where: { $0.query.map { Node.matches($0, peer) } ?? true }) else { return nil }
        return waiters.remove(at: index)
    }

    /// Whether a waiter still waiting wants an invitation from `peer` (`takeWaiter` would take one).
    func hasWaiter(for peer: AuthenticatedPeer) -> Bool {
        waiters.contains { !$0.answered.isSettled && ($0.query.map { Node.matches($0, peer) } ?? true) }
    }

    /// Every waiter gets nothing (the node stops).
    mutating func endWaiters() {
        for waiter in waiters { waiter.answered.settle(.nodeStopped) }
        waiters = []
    }
}

extension Invitations.Incoming {
    /// Its `invitation` event, as `nearby accept` and stream listeners show one that waits.
    var event: Events.Invitation {
        Events.Invitation(FrameBody.Invite(invitation: id, context: context, timeout: 0, offer: offer), from: link.peer, expires: expires)
    }
}

extension Invitations.Outgoing {
    /// A new invitation's ID: 10 characters of base 36 (the inviter chooses it).
    static func newID() -> String {
        String((0..<10).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement() ?? "0" })
    }
}

extension Events.Invitation {
    /// The `invitation` event of `invite` from `peer`, waiting until `expires` (`answeredBy`: who
    /// answers it at once, if anyone).
    init(_ invite: FrameBody.Invite, from peer: AuthenticatedPeer, expires: Date, answeredBy: String? = nil) {
        self.init(
            invitation: invite.invitation, peer: peer.ref, context: invite.context, verificationCode: peer.verificationCode,
            encrypted: peer.encrypted, expires: EventEncoder.timestamp(expires), answeredBy: answeredBy, offer: invite.offer?.bounded)
    }
}
