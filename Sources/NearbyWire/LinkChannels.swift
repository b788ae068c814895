import NIOCore
import NearbyBase

/// The channels of one link and what runs on each (a file we send, a file we receive, a stream),
/// owned by the link: frames on them are routed here by the link's own task, never through the
/// node, and when the link goes everything it owned goes with it (`drop`). The multiplexer's rules
/// (`ChannelMux`) and the table change together under one lock, so no state is ever copied out and
/// written back across a suspension.
final class LinkChannels: Sendable {
    /// What runs on one channel (a file we send or receive, a bundle, a stream).
    typealias End = any ChannelEnd

    /// Where a frame from the peer goes.
    enum Route: Sendable {
        /// A frame for a channel that has ended (its last window credits, data in flight when we
        /// reset it): dropped, and no reason to end the link.
        case ignore
        /// An open we refuse without making anything for it (over the cap): send this answer.
        case refuse(Frame)
        /// The peer offers a channel: the node decides (files by its policy, streams to a listener).
        case offer(UInt32, FrameBody.Open)
        case deliver(End, ChannelMessage)
    }

    private struct Table {
        var mux: ChannelMux
        var ends: [UInt32: End] = [:]
        /// The link is gone: nothing more may be added.
        var dropped = false
    }

    private let table: Locked<Table>

    init(isClient: Bool, limits: ChannelMux.Limits = ChannelMux.Limits()) {
        table = Locked(Table(mux: ChannelMux(isClient: isClient, limits: limits)))
    }

    /// A new channel of ours running `make(id)`; nil at the cap or once the link is gone.
    func open<Made: Sendable>(_ make: (UInt32) -> (End, Made)) -> Made? {
        table.withLock { table in
            guard !table.dropped, let id = table.mux.open() else { return nil }
            let (end, made) = make(id)
            table.ends[id] = end
            return made
        }
    }

    /// The peer's offer on `id` is accepted: data may flow, and `end` takes its frames.
    @discardableResult
    func accept(_ id: UInt32, _ end: End) -> Bool {
        table.withLock { table in
            guard !table.dropped else { return false }
            table.mux.accept(id)
            table.ends[id] = end
            return true
        }
    }

    /// `end` takes the frames of the peer's offer `id` before it is accepted (a stream waiting for a
    /// listener: its reset must still reach it).
    @discardableResult
    func hold(_ id: UInt32, _ end: End) -> Bool {
        table.withLock { table in
            guard !table.dropped, table.ends[id] == nil else { return false }
            table.ends[id] = end
            return true
        }
    }

    /// The channel is over (done, refused, reset): later frames on it are ignored.
    func finish(_ id: UInt32) {
        table.withLock { table in
            table.mux.finish(id)
            table.ends[id] = nil
        }
    }

    /// `count` bytes of the peer's data on `id` were consumed: the window frame to send, if due.
    func consumed(_ id: UInt32, _ count: Int) -> Frame? {
        table.withLock { $0.mux.consumed(id, count) }
    }

    /// Checks a frame from the peer against the rules and says where it goes. A peer's `reset`
    /// ends its channel here, at once.
    func route(_ id: UInt32, _ message: ChannelMessage) throws(ProtocolViolation) -> Route {
        try table.withLock { (table: inout Table) throws(ProtocolViolation) -> Route in
            switch try table.mux.receive(id, message) {
            case .ignore: return .ignore
            case let .refuse(answer): return .refuse(answer)
            case .deliver: break
            }
            guard let end = table.ends[id] else {
                if case let .open(offer) = message { return .offer(id, offer) }
                return .ignore
            }
            if case .reset = message { table.ends[id] = nil }
            return .deliver(end, message)
        }
    }

    /// Whether `id` still runs `end`.
    func holds(_ id: UInt32, _ end: End) -> Bool {
        table.withLock { table in table.ends[id].map { $0 === end } ?? false }
    }

    /// Whether the link is gone (`drop`).
    var isDropped: Bool { table.withLock { $0.dropped } }

    /// The link is gone: every channel it carried, taken out at once. Nothing can be added after.
    func drop() -> [End] {
        table.withLock { table in
            table.dropped = true
            defer { table.ends = [:] }
            return Array(table.ends.values)
        }
    }
}
