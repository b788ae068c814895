/// The node's work, run as children of one task: connections, timers, the browser's updates.
/// Cancelling `run()` ends them all; `finish()` lets it return once the last one has. Not a
/// swift-service-lifecycle `ServiceGroup` (2.13): jobs arrive while it runs, thousands a day, from
/// synchronous code, and `addServiceUnlessShutdown` is async and keeps every service ever added
/// (with its shutdown manager) for the group's life; a group with no service yet returns at once,
/// and one whose service returns is cancelled unless each says otherwise. Signals, stop order and
/// exit codes stay where they are: the CLI's, and `Node.stop`'s.
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
