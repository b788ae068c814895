
/// A value that arrives once, awaited by at most one task, and a wait that ends when that task is
/// cancelled: the building block of every waiter in the node (invitations, `accept`, stream
/// listeners). Whoever settles it first wins; later settles are ignored, so a late answer can never
/// resume a continuation twice or wake a waiter that has gone. The one place a raw continuation is
/// written (OneOfEachTests holds it): a queue of waiters is a queue of `OneShot`s.
package final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value?, Never>)
        case settled(Value?)
    }

    private let state = Locked<State>(.empty)

    package init() {}

    /// Settles with `value`; false when it was settled (or abandoned) already.
    @discardableResult
    package func settle(_ value: Value) -> Bool { finish(value) }

    /// Settles with nothing: the waiter sees nil.
    @discardableResult
    package func abandon() -> Bool { finish(nil) }

    private func finish(_ value: Value?) -> Bool {
        let (changed, waiter): (Bool, CheckedContinuation<Value?, Never>?) = state.withLock { state in
            switch state {
            case .settled: return (false, nil)
            case let .waiting(continuation):
                state = .settled(value)
                return (true, continuation)
            case .empty:
                state = .settled(value)
                return (true, nil)
            }
        }
        waiter?.resume(returning: value)
        return changed
    }

    package var isSettled: Bool { state.withLock { if case .settled = $0 { true } else { false } } }

    /// The value, or nil when abandoned, at `deadline`, or when the waiting task was cancelled.
    package func wait(until deadline: ContinuousClock.Instant) async -> Value? {
        await firstResult(until: deadline) { await self.wait() }
    }

    /// The value, or nil when abandoned or when the waiting task was cancelled.
    package func wait() async -> Value? {
        await withTaskCancellationHandler {
            await suspend(cancellable: true)
        } onCancel: {
            abandon()
        }
    }

    /// The value, or nil when abandoned; a cancelled task waits on. For work already handed to a
    /// thread that always settles (a queued write's hash, a close, a sync), whose result the caller
    /// needs even when cancelled: the wait is as long as that work.
    package func waitThroughCancellation() async -> Value? {
        await suspend(cancellable: false)
    }

    private func suspend(cancellable: Bool) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let now: Value?? = state.withLock { state in
                switch state {
                case let .settled(value): return .some(value)
                case .waiting: return .some(nil)  // one waiter only: a second one gets nothing
                case .empty:
                    if cancellable, Task.isCancelled {
                        state = .settled(nil)
                        return .some(nil)
                    }
                    state = .waiting(continuation)
                    return .none
                }
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}

import NIOCore

extension EventLoopFuture where Value: Sendable {
    /// The future's value, or `CancellationError` as soon as the calling task is cancelled (where
    /// `get()` would wait for the future however long it takes). A value that arrives after the
    /// caller gave up goes to `late`, to be cleaned up.
    package func value(orCancelled late: @escaping @Sendable (Value) -> Void = { _ in }) async throws -> Value {
        let shot = OneShot<Result<Value, any Error>>()
        whenComplete { result in
            if !shot.settle(result), case let .success(value) = result { late(value) }
        }
        guard let result = await shot.wait() else { throw CancellationError() }
        return try result.get()
    }
}
