import NearbyBase

/// How many control requests are being served: a node that stops lets them finish first.
package final class ActiveRequests: Sendable {
    private let state = Locked<(count: Int, idle: [OneShot<Void>])>((0, []))
    package init() {}
    package var count: Int { state.withLock { $0.count } }
    package func begin() { state.withLock { $0.count += 1 } }
    package func end() {
        let waiters = state.withLock { state -> [OneShot<Void>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.idle = [] }
            return state.idle
        }
        for waiter in waiters { waiter.settle(()) }
    }

    /// Waits until no request is being served, or `deadline`, or the caller is cancelled.
    package func idle(by deadline: ContinuousClock.Instant) async {
        let waiter = OneShot<Void>()
        let busy = state.withLock { state -> Bool in
            guard state.count > 0 else { return false }
            state.idle.append(waiter)
            return true
        }
        if busy { _ = await waiter.wait(until: deadline) }
    }
}
