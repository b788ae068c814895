/// The result of `work`, or nil when `deadline` passes first or the calling task is cancelled;
/// `work` is cancelled either way once one of them has ended.
package func firstResult<T: Sendable>(
    until deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () async -> T?
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await work() }
        group.addTask {
            try? await Task.sleep(until: deadline)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// The result of `work`, or nil when `limit` passes first or the calling task is cancelled.
package func firstResult<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T?) async -> T? {
    await firstResult(until: .now + limit, work)
}
