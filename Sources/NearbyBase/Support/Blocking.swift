import NIOCore
import NIOPosix
import Synchronization

/// Blocking work — reading and writing files, hashing them, `getaddrinfo` — runs on one thread pool
/// of NIO's (`Blocking.pool`), never on the cooperative pool or an event loop. `run` hands `work` a
/// `Cancellation` to check between steps: the calling task's cancellation sets it, so a long job (a
/// whole-file hash) stops at its next step instead of making Ctrl-C wait for it. `Serial` runs one
/// file's or descriptor's jobs in order on the same pool. Public for the other protocols' receivers
/// (LocalSend, the web server).
package enum Blocking {
    /// The process's pool for blocking work. More threads than cores: a write to a pipe whose reader
    /// is slow blocks its thread, and must not hold up every other file and lookup.
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 16)
        pool.start()
        return pool
    }()

    package final class Cancellation: Sendable {
        private let flag = Atomic(false)
        package var isCancelled: Bool { flag.load(ordering: .relaxed) }
        func cancel() { flag.store(true, ordering: .relaxed) }
    }

    /// The result of `work`, run on the pool; throws what `work` throws, or when the pool is gone.
    package static func run<T: Sendable>(_ work: @escaping @Sendable (Cancellation) throws -> T) async throws -> T {
        let cancellation = Cancellation()
        return try await withTaskCancellationHandler {
            try await pool.runIfActive { try work(cancellation) }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Jobs run one after another on the pool, each after the one before and never two at once:
    /// the order a file's reads, writes or hashes need, as a serial queue gives it.
    package final class Serial: Sendable {
        private struct State {
            var jobs = CircularBuffer<@Sendable () -> Void>()
            var running = false
        }
        private let state = Locked(State())

        package init() {}

        /// Queues `job` behind the others.
        package func async(_ job: @escaping @Sendable () -> Void) {
            let start = state.withLock { state in
                state.jobs.append(job)
                defer { state.running = true }
                return !state.running
            }
            if start { pool.submit { [self] _ in drain() } }
        }

        /// Runs the queued jobs until none is left; a job queued meanwhile runs in this turn.
        private func drain() {
            while let job = state.withLock({ state -> (@Sendable () -> Void)? in
                guard let next = state.jobs.popFirst() else {
                    state.running = false
                    return nil
                }
                return next
            }) {
                job()
            }
        }
    }
}
