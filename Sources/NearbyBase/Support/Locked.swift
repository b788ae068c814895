#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock box that tasks and closures can share: a `Mutex` is not copyable, so an escaping closure
/// (a child task, a NIO callback) cannot capture one; it captures this box instead. The one lock
/// box of every module (LocalSend's and the web server's included), and the only lock: no source
/// uses `Synchronization.Mutex` (`OneOfEachTests.noMutexButLocked`).
///
/// A pthread mutex, not `Synchronization.Mutex`: on Linux that one is a priority-inheritance futex,
/// and a contended lock is handed to its next owner inside the kernel (`FUTEX_UNLOCK_PI`), with no
/// atomic in user space that ThreadSanitizer could pair, so under contention TSan reports every
/// access inside its `withLock` as a race (26 reports in the unit suite, all of this kind, and
/// each later run found another lock contended: docs/fuzzing.md, "Sanitizers"); the hand-over is
/// slow as well (swiftlang/swift#88440).
/// TSan knows pthread's mutex.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: sending Value) {
        mutex = UnsafeMutablePointer.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// `body` with the value, the lock held; as `Mutex.withLock`.
    package func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
