import NIOCore
import NearbyBase

/// Closes a connection once a deadline passes that was not pushed back: one timer on its event
/// loop, re-armed when it fires early, so pushing it back costs a lock and no task; brought
/// forward (the idle deadline shorter than the handshake's, or than a hold), it is armed again.
package final class ConnectionDeadline: Sendable {
    private struct State {
        var deadline = NIODeadline.distantFuture
        var timer: Scheduled<Void>?
        /// When `timer` fires.
        var armed = NIODeadline.distantFuture
        var done = false
    }

    private let channel: any Channel
    private let state = Locked(State())

    package init(_ channel: any Channel) { self.channel = channel }

    package func push(_ span: Duration) {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(span / .nanoseconds(1)))
        let (arm, early) = state.withLock { state -> (Bool, Scheduled<Void>?) in
            state.deadline = deadline
            guard !state.done else { return (false, nil) }
            guard let timer = state.timer else { return (true, nil) }
            guard state.armed > deadline else { return (false, nil) }
            state.timer = nil
            return (true, timer)
        }
        early?.cancel()
        if arm { schedule(deadline) }
    }

    private func schedule(_ deadline: NIODeadline) {
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { [self] in self.fired() }
        let stale = state.withLock { state -> Bool in
            guard !state.done else { return true }
            state.timer = timer
            state.armed = deadline
            return false
        }
        if stale { timer.cancel() }
    }

    private enum Next { case nothing, again(NIODeadline), close }

    private func fired() {
        let next = state.withLock { state -> Next in
            state.timer = nil
            guard !state.done else { return .nothing }
            if state.deadline <= .now() {
                state.done = true
                return .close
            }
            return .again(state.deadline)
        }
        switch next {
        case .nothing: break
        case let .again(deadline): schedule(deadline)
        case .close:
            NearbyLog.logger.debug("closing an HTTP connection from \(channel.remoteAddress.map(AddressWords.describe) ?? "?"): its deadline passed")
            channel.close(promise: nil)
        }
    }

    package func cancel() {
        let timer = state.withLock { state -> Scheduled<Void>? in
            state.done = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }
}
