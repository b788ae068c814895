import NIOCore
import NearbyBase

/// The frames of one link passed up to the node and not yet handled by it: they wait in
/// NIOAsyncChannel's inbound buffer, whose back-pressure counts frames, not bytes — ten 1 MiB
/// messages behind a link whose node side waits (to write to a peer that does not read) were
/// 10 MiB per link that no budget saw. Their bytes are charged here, to the link, as they go up
/// and given back as the node handles them: past `perLink` the link stops reading (`ReadThrottle`) until
/// the node catches up, and a frame over `ReadThrottle.freeFrame` (a message) is charged to the node's
/// `MemoryBudget.frames` too, so that the messages held for all links, arriving or waiting, share
/// one budget. A file's or a stream's data is not charged here: its channel's window and the bulk
/// read budget bound it.
final class WaitingFrames: Sendable {
    /// One message of the largest size may wait; past it, the link's reads are held.
    static let perLink = Frame.headerSize + Frame.maxPayload

    private struct State {
        /// Each frame that went up, in order: its bytes charged here (0 for data) and its share of
        /// the node's budget, if it took one.
        var frames: [(bytes: Int, share: MemoryBudget.Share?)] = []
        var head = 0
        var bytes = 0
        /// Called once the link is under `perLink` again (its reads were held).
        var wake: (@Sendable () -> Void)?
        var ended = false
    }

    private let state = Locked(State())
    let budget: MemoryBudget?

    init(budget: MemoryBudget? = .frames) { self.budget = budget }

    /// Bytes waiting for the node now.
    var bytes: Int { state.withLock { $0.bytes } }

    /// A frame went up to the node (on the event loop, `MessageShortcut`).
    func wentUp(_ frame: Frame) {
        let bytes = frame.kind == .data ? 0 : Frame.headerSize + frame.payload.readableBytes
        let share = bytes > ReadThrottle.freeFrame ? budget?.charge(bytes) : nil
        let late = state.withLock { state -> Bool in
            guard !state.ended else { return true }
            state.frames.append((bytes, share))
            state.bytes += bytes
            return false
        }
        if late, let share { budget?.give(share) }
    }

    /// The node handled the oldest frame that went up.
    func handled() {
        let (share, wake) = state.withLock { state -> (MemoryBudget.Share?, (@Sendable () -> Void)?) in
            guard state.head < state.frames.count else { return (nil, nil) }
            let frame = state.frames[state.head]
            state.head += 1
            if state.head > 64, state.head * 2 > state.frames.count {
                state.frames.removeFirst(state.head)
                state.head = 0
            }
            state.bytes -= frame.bytes
            guard state.bytes <= Self.perLink, let wake = state.wake else { return (frame.share, nil) }
            state.wake = nil
            return (frame.share, wake)
        }
        if let share { budget?.give(share) }
        wake?()
    }

    /// Whether the link holds more than its share now; if so, `wake` is called once it does not.
    func over(wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.bytes > Self.perLink, !state.ended else { return false }
            state.wake = wake
            return true
        }
    }

    /// The link ended: what still waits is given back (the node will not handle it).
    func end() {
        let shares = state.withLock { state -> [MemoryBudget.Share] in
            state.ended = true
            state.wake = nil
            defer {
                state.frames = []
                state.head = 0
                state.bytes = 0
            }
            return state.frames[state.head...].compactMap(\.share)
        }
        for share in shares { budget?.give(share) }
    }
}
