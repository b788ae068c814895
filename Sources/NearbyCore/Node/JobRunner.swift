/// The node's work, run as children of one task: connections, timers, the browser's updates. Jobs
/// arrive while it runs (a connection accepted, an invitation's expiry), which is why this is not
/// a `ServiceGroup` (its services are fixed when it starts): cancelling `run()` ends them all, and
/// `finish()` lets it return once the last one has.
struct JobRunner: Sendable {
    private let jobs: AsyncStream<@Sendable () async -> Void>
    private let queue: AsyncStream<@Sendable () async -> Void>.Continuation

    init() { (jobs, queue) = AsyncStream.makeStream() }

    /// Runs every job handed over, each as a child task, until `finish()` and the last job's end, or
    /// until cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask { await job() }
            }
        }
    }

    /// Hands a job to `run()`; after `finish()` it is dropped.
    func spawn(_ job: @escaping @Sendable () async -> Void) { queue.yield(job) }

    /// No more jobs: `run()` returns once those running have ended.
    func finish() { queue.finish() }
}
