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
    private struct State {
        var received: Int32?
        var waiters: [UUID: OneShot<Int32>] = [:]
    }

    private static let state = Locked(State())
    private static let queue = DispatchQueue(label: "nearby.signals")
    nonisolated(unsafe) private static var source: (any DispatchSourceRead)?
    /// The handler's way out: it writes the signal's number to this pipe (write(2) is
    /// async-signal-safe), and a read source on the other end delivers it. A signal that comes
    /// before the read source is registered waits in the pipe: none is lost, none is ignored.
    /// (Dispatch's own signal sources were not enough: the disposition had to be SIG_IGN while
    /// Dispatch registered the source on its manager thread, and a SIGINT in that moment was lost.)
    private static let installed: Bool = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return false }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        signalPipe.store(ends[1], ordering: .releasing)
        let reading = ends[0]
        let readable = DispatchSource.makeReadSource(fileDescriptor: reading, queue: queue)
        readable.setEventHandler {
            var byte: UInt8 = 0
            while read(reading, &byte, 1) == 1 { deliver(Int32(byte)) }
        }
        readable.resume()
        source = readable
        for number in [SIGINT, SIGTERM] {
            _ = signal(number) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(TerminationSignal.signalPipe.load(ordering: .acquiring), &byte, 1)
            }
        }
        return true
    }()
    /// The pipe's write end, read by the handler.
    private static let signalPipe = Atomic<Int32>(-1)

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
