import NearbyBase
import NearbyIdentity
import NearbyWire

/// What an owner starts that runs as the node's, a child of `Node.run()` like every connection and
/// timer: a timer that, when due (unless the node stopped first), the node hands back to the owner
/// that set it (`Node.due`), and a connection we dialled, run from its handshake to its close
/// (`Node.serve`). The owners are built in the node's init, before the node is, so they hold this
/// and not the node; the node binds its two entry points at the end of its init (`bind`).
final class NodeTasks: Sendable {
    /// A timer an owner set, handed back to it when due.
    enum Timer: Sendable {
        /// An invitation a peer sent us that nobody answered in time (`InvitationDesk.expire`).
        case invitationExpires(String)
        /// An incoming stream that waited for a listener in vain (`StreamMatchmaker.expire`).
        case unclaimedStream(Int)
    }

    /// A connection we dialled for `invitation`, from the peer `expected` (when we know its ID).
    struct Dialled: Sendable {
        let negotiated: Negotiated
        let expected: PeerID?
        let invitation: Invitations.Outgoing
        let sink: any EventSink
    }

    private struct Entries: Sendable {
        let due: @Sendable (Timer) async -> Void
        let serve: @Sendable (Dialled) async -> Void
    }

    private let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void
    private let entries = Locked<Entries?>(nil)

    init(spawn: @escaping @Sendable (@escaping @Sendable () async -> Void) -> Void) { self.spawn = spawn }

    /// The node's entry points (it holds them weakly, so this keeps no node alive).
    func bind(due: @escaping @Sendable (Timer) async -> Void, serve: @escaping @Sendable (Dialled) async -> Void) {
        entries.withLock { $0 = Entries(due: due, serve: serve) }
    }

    /// After `delay`, unless the node stops first, `timer` goes back to its owner on the node.
    func after(_ delay: Duration, _ timer: Timer) {
        let entries = entries
        spawn {
            do { try await Task.sleep(for: delay) } catch { return }
            await entries.withLock { $0 }?.due(timer)
        }
    }

    /// Runs a connection we dialled as a child of the node.
    func serve(_ dialled: Dialled) {
        let entries = entries
        spawn { await entries.withLock { $0 }?.serve(dialled) }
    }
}
