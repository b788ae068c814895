import Synchronization

/// A `Mutex` that tasks and closures can share: a `Mutex` is not copyable, so an escaping closure
/// (a child task, a NIO callback) cannot capture one; it captures this box instead. The one lock
/// box of every module (LocalSend's and the web server's included); a type that owns its state
/// keeps a `Mutex` member instead.
package final class Locked<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    package init(_ value: Value) { storage = Mutex(value) }
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock { try body(&$0) }
    }
}
