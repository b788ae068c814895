import Synchronization

/// A value behind a lock that tasks can share (a `Mutex` is not copyable, so a closure cannot capture one).
final class Locked<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock { try body(&$0) }
    }
}
