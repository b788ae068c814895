import NIOCore
import NIOPosix

/// A `RepeatLimiter` for live output: behind a lock, on the continuous clock, and with a timer, so
/// the summary of a window also comes when the flood has stopped (not only with the next line of
/// its kind). Summaries go to `report`, before the line that found them due. The timer is a task
/// scheduled on an event loop (no detached work): `drain` cancels it.
final class TimedRepeatLimiter<Key: Hashable & Sendable>: Sendable {
    package typealias Summary = RepeatLimiter<Key>.Summary

    private struct State {
        var limiter: RepeatLimiter<Key>
        var timerArmed = false
        var timer: Scheduled<Void>?
    }

    private let state: Locked<State>
    private let report: @Sendable (Summary) -> Void

    package init(
        burst: Int = RepeatLimiter<Key>.defaultBurst, window: Duration = RepeatLimiter<Key>.defaultWindow,
        report: @escaping @Sendable (Summary) -> Void
    ) {
        state = Locked(State(limiter: RepeatLimiter(burst: burst, window: window)))
        self.report = report
    }

    /// Whether a line of kind `key` is printed now.
    package func admit(_ key: Key) -> Bool {
        let now = ContinuousClock.now
        let (show, summary, arm) = state.withLock { state -> (Bool, Summary?, ContinuousClock.Instant?) in
            let (show, summary) = state.limiter.admit(key, now: now)
            guard !show, !state.timerArmed else { return (show, summary, nil) }
            state.timerArmed = true
            return (show, summary, now + state.limiter.window)
        }
        if let summary { report(summary) }
        if let arm { wake(at: arm) }
        return show
    }

    /// Reports every window's held-back lines now, ended or not: for a node that stops.
    package func drain() {
        let summaries = state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.timerArmed = false
            return state.limiter.due(now: .now + state.limiter.window).summaries
        }
        summaries.forEach(report)
    }

    private func wake(at deadline: ContinuousClock.Instant) {
        let delay = max(Duration.zero, deadline - .now)
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            fire()
        }
        state.withLock { state in
            // A drain between arming and here ended the window: this timer has nothing to do.
            if state.timerArmed { state.timer = timer } else { timer.cancel() }
        }
    }

    private func fire() {
        let now = ContinuousClock.now
        let (summaries, next) = state.withLock { state in
            let due = state.limiter.due(now: now)
            state.timerArmed = due.next != nil
            state.timer = nil
            return due
        }
        summaries.forEach(report)
        if let next { wake(at: next) }
    }
}
