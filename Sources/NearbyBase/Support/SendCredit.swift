
/// Flow-control credit a peer grants us, summed as it comes: however many window frames arrive,
/// this holds one number, never a queue of them. One sender takes from it, waiting while it is
/// empty; closing it (reset, lost link) ends that wait.
package final class SendCredit: Sendable {
    private struct State {
        var available: Int
        var closed = false
        var waiter: OneShot<Void>?
    }

    private let state: Locked<State>

    package init(initial: Int) { state = Locked(State(available: initial)) }

    /// More credit from the peer. Absurd totals are clamped: we never have that much to send anyway.
    package func add(_ count: Int) {
        let waiter = state.withLock { state -> OneShot<Void>? in
            state.available = min(state.available + max(0, count), Int(Int32.max))
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.settle(())
    }

    /// No more credit will come.
    package func close() {
        let waiter = state.withLock { state -> OneShot<Void>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.settle(())
    }

    /// Takes up to `limit` bytes of credit, waiting while there is none; nil once closed or when the
    /// calling task is cancelled.
    package func take(upTo limit: Int) async -> Int? {
        while true {
            let taken = state.withLock { state -> Int?? in
                if state.closed { return .some(nil) }
                guard state.available > 0 else { return .none }
                let count = min(state.available, limit)
                state.available -= count
                return .some(count)
            }
            if let taken { return taken }
            if Task.isCancelled { return nil }
            let ready = OneShot<Void>()
            let now = state.withLock { state -> Bool in
                if state.closed || state.available > 0 { return true }
                state.waiter = ready
                return false
            }
            // Ends on credit, on close, or when this task is cancelled.
            if !now { _ = await ready.wait() }
        }
    }

    /// Takes exactly `count` bytes of credit, waiting for as long as that takes; false (nothing
    /// kept) once closed or when the calling task is cancelled.
    package func take(exactly count: Int) async -> Bool {
        var taken = 0
        while taken < count {
            guard let more = await take(upTo: count - taken) else {
                giveBack(taken)
                return false
            }
            taken += more
        }
        return true
    }

    /// Gives back credit taken but not used.
    package func giveBack(_ count: Int) { add(count) }
}
