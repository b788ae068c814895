import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM as an async value, so long-running commands can end cleanly (withdraw the
/// advertisement, say goodbye) instead of dying mid-way. The handlers are installed once, on first
/// use, and a signal is sticky: once one arrived, every wait returns at once — the process is
/// ending, and no signal is lost between two waits.
package enum TerminationSignal {
    private struct State: ~Copyable {
        var received: Int32?
        var waiters: [UUID: OneShot<Int32>] = [:]
    }

    private static let state = Mutex(State())
    private static let queue = DispatchQueue(label: "nearby.signals")
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let installed: Bool = {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { deliver(number) }
            source.resume()
            return source
        }
        return true
    }()

    private static func deliver(_ number: Int32) {
        let waiters = state.withLock { state in
            if state.received == nil { state.received = number }
            let waiting = Array(state.waiters.values)
            state.waiters = [:]
            return waiting
        }
        for waiter in waiters { waiter.settle(number) }
    }

    /// Starts listening for signals (Ctrl-C no longer kills the process outright).
    package static func install() { _ = installed }

    /// The first SIGINT or SIGTERM, when it arrives; nil when the waiting task is cancelled first.
    package static func next() async -> Int32? {
        install()
        let id = UUID()
        let waiter = OneShot<Int32>()
        let already = state.withLock { state -> Int32? in
            if let received = state.received { return received }
            state.waiters[id] = waiter
            return nil
        }
        if let already { return already }
        let number = await waiter.wait()
        _ = state.withLock { $0.waiters.removeValue(forKey: id) }
        return number
    }
}
