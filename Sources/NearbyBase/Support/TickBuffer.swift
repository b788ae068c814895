import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Output lines written on an event loop wait for the end of its current batch of work and leave
/// together, one `write(2)` per file descriptor: 200,000 messages arriving in a burst are not
/// 200,000 system calls. Text written anywhere else (a plain thread, a test) goes out at once, after
/// whatever waits. Nothing waits longer than the loop's tick, order is kept, and what still waits
/// when the process exits is written by `atexit`.
package final class TickBuffer: Sendable {
    private struct Pending {
        var pieces: [(fd: Int32, text: String)] = []
        var bytes = 0
        var scheduled = false
        var registered = false
    }

    private let write: @Sendable (Int32, String) -> Void
    private let pending = Locked(Pending())
    /// Held while writing, so what one drain took is out before what the next one takes.
    private let writing = Locked(())
    /// A burst is written once it holds this much, without waiting for the tick to end.
    static let burst = 256 << 10

    package init(write: @escaping @Sendable (Int32, String) -> Void) {
        self.write = write
    }

    /// Lines appended inside `holding`'s body, on its thread or task, wait for the body's end and
    /// leave together: a capture loop that turns 256 packets into 256 lines wakes the output's
    /// writer once, not 256 times (`watch` under a flood).
    package static func holding<T>(_ body: () throws -> T) rethrows -> T {
        let held = Held()
        defer { held.drain() }
        return try $held.withValue(held) { try body() }
    }

    @TaskLocal private static var held: Held?

    /// The buffers lines were held in, drained at `holding`'s end.
    private final class Held: Sendable {
        private let buffers = Locked<[TickBuffer]>([])
        func hold(_ buffer: TickBuffer) {
            buffers.withLock { list in if !list.contains(where: { $0 === buffer }) { list.append(buffer) } }
        }
        func drain() {
            for buffer in buffers.withLock({ Swift.exchange(&$0, with: []) }) { buffer.drain() }
        }
    }

    /// Writes `text` on `fd` now, or at the end of the current tick when called on an event loop
    /// (or of `holding`'s body).
    package func append(_ text: String, fd: Int32) {
        if let held = Self.held {
            let full = pending.withLock { state in
                state.pieces.append((fd, text))
                state.bytes += text.utf8.count
                return state.bytes >= Self.burst
            }
            return full ? drain() : held.hold(self)
        }
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        let (schedule, full, register) = pending.withLock { state in
            state.pieces.append((fd, text))
            state.bytes += text.utf8.count
            let first = !state.scheduled
            state.scheduled = true
            let register = loop != nil && !state.registered
            state.registered = state.registered || register
            return (first, state.bytes >= Self.burst, register)
        }
        guard let loop, !full else { return drain() }
        if register { Self.registerForExit(self) }
        if schedule { loop.execute { self.drain() } }
    }

    /// Writes everything waiting, joined per run of the same descriptor.
    package func drain() {
        writing.withLock { _ in
            let pieces = pending.withLock { state in
                state.scheduled = false
                state.bytes = 0
                return Swift.exchange(&state.pieces, with: [])
            }
            var index = pieces.startIndex
            while index < pieces.endIndex {
                let fd = pieces[index].fd
                var joined = ""
                while index < pieces.endIndex, pieces[index].fd == fd {
                    joined += pieces[index].text
                    index += 1
                }
                write(fd, joined)
            }
        }
    }

    private static let live = Locked<[TickBuffer]>([])

    private static func registerForExit(_ buffer: TickBuffer) {
        let first = live.withLock { buffers in
            buffers.append(buffer)
            return buffers.count == 1
        }
        if first { atexit { TickBuffer.drainAll() } }
    }

    static func drainAll() {
        for buffer in live.withLock({ $0 }) { buffer.drain() }
    }
}
