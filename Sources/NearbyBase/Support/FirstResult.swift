/// The result of `work`, or nil when `deadline` passes first or the calling task is cancelled;
/// `work` is cancelled either way once one of them has ended.
/// A result that `work` still produced after the deadline won goes to `discard` (a connection
/// opened too late, to be closed) instead of being dropped.
package func firstResult<T: Sendable>(
    until deadline: ContinuousClock.Instant, discard: (@Sendable (T) async -> Void)? = nil,
    _ work: @escaping @Sendable () async -> T?
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await work() }
        group.addTask {
            try? await Task.sleep(until: deadline)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        while let late = await group.next() {
            if let late, let discard { await discard(late) }
        }
        return first
    }
}

/// The value of `work`, or nil when `limit` passes first; `work`'s error, or `CancellationError`
/// when the calling task is cancelled, is thrown. `work` is cancelled either way once one has ended.
package func firstThrowingResult<T: Sendable>(
    within limit: Duration, _ work: @escaping @Sendable () async throws -> T
) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
}

/// The result of `work`, or nil when `limit` passes first or the calling task is cancelled.
package func firstResult<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T?) async -> T? {
    await firstResult(until: .now + limit, work)
}
