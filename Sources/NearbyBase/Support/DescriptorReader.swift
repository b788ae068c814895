import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Blocking {
    /// The pool of descriptors that stay open as long as a stream or a `send --lines` does (stdin,
    /// stdout, a client's passed ones), apart from `pool`: their waits never hold up a file or a
    /// lookup. A job waits for its descriptor one `turn` at a time and, if it is not ready, goes
    /// to the back of the queue (`DescriptorReader`, `PassedOutput`), so any number of idle
    /// descriptors share these few threads, and none holds one for longer than a turn.
    package static let descriptors: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    /// The longest one job waits in poll(2) before giving its thread to the next.
    static let turn: Int32 = 100

    /// Whether `fd` is ready for `events` within a turn (an error or a hang-up is ready too: the
    /// read or write says what it is).
    package static func ready(_ fd: Int32, for events: Int16) -> Bool {
        var waiting = pollfd(fd: fd, events: events, revents: 0)
        return poll(&waiting, 1, turn) > 0
    }
}

/// Reads a descriptor on `Blocking.descriptors`, up to `ahead` chunks ahead of its one consumer:
/// blocking reads never occupy the async runtime's threads, memory stays bounded, and a reader whose
/// input never comes costs a thread a turn at a time, not for good. Nothing is read before the
/// first `next()`. `stop()` — or the consumer's cancellation — ends the reading within a turn;
/// `left` runs once the reading is over for good (it closes a passed descriptor), never while a
/// read is under way.
package final class DescriptorReader: Sendable {
    /// One read: the bytes, the errno that stopped it (0 if none) and whether the input ended.
    package typealias Read = @Sendable (Int32) -> (ByteBuffer, failure: Int32, ended: Bool)

    private let fd: Int32
    private let ahead: Int
    private let read: Read
    private let name: String
    private let left: @Sendable () -> Void

    private struct State {
        var chunks = CircularBuffer<ByteBuffer>()
        /// After the chunks: the end (nil inside) or the failure that ended the input.
        var ending: NearbyError??
        /// A job is queued or running on the pool.
        var reading = false
        var stopped = false
        var finished = false
        var wake: OneShot<Void>?
    }
    private let state = Locked(State())

    /// `name`: what the input is called in an error ("stdin").
    package init(fd: Int32, ahead: Int, name: String, read: @escaping Read, left: @escaping @Sendable () -> Void = {}) {
        self.fd = fd
        self.ahead = ahead
        self.name = name
        self.read = read
        self.left = left
    }

    package enum Next {
        case chunk(ByteBuffer)
        case end
        /// Stopped, or the consumer was cancelled.
        case stopped
    }

    /// The next chunk, the end, or `.stopped`; throws the read's failure.
    package func next() async throws(NearbyError) -> Next {
        while true {
            enum Step { case chunk(ByteBuffer), end, failed(NearbyError), stopped, wait(OneShot<Void>) }
            let (step, start): (Step, Bool) = state.withLock { state in
                if state.stopped { return (.stopped, false) }
                if let chunk = state.chunks.popFirst() { return (.chunk(chunk), Self.resume(&state, ahead)) }
                if let ending = state.ending { return (ending.map { .failed($0) } ?? .end, false) }
                let wake = OneShot<Void>()
                state.wake = wake
                return (.wait(wake), Self.resume(&state, ahead))
            }
            if start { submit() }
            switch step {
            case let .chunk(chunk): return .chunk(chunk)
            case .end: return .end
            case let .failed(error): throw error
            case .stopped: return .stopped
            case let .wait(wake):
                if await wake.wait() == nil, Task.isCancelled {
                    stop()
                    return .stopped
                }
            }
        }
    }

    /// No more reads: the job leaves at its next turn (and `left` runs); at once when none runs.
    package func stop() {
        let (idle, wake) = state.withLock { state in
            state.stopped = true
            defer { state.wake = nil }
            return (!state.reading, state.wake)
        }
        wake?.settle(())
        if idle { leave() }
    }

    /// Whether a job should (re)start: room ahead, nothing ended, not stopped, none running.
    private static func resume(_ state: inout State, _ ahead: Int) -> Bool {
        guard !state.reading, !state.stopped, state.ending == nil, state.chunks.count < ahead else { return false }
        state.reading = true
        return true
    }

    private func submit() {
        Blocking.descriptors.submit { [self] _ in turn() }
    }

    /// One turn on the pool: wait a turn for input, read a chunk, hand it over; then to the back of
    /// the queue while there is room ahead.
    private func turn() {
        let ready = !state.withLock { $0.stopped } && Blocking.ready(fd, for: Int16(POLLIN))
        var chunk: ByteBuffer?
        var ending: NearbyError??
        if ready {
            let (buffer, failure, ended) = read(fd)
            if buffer.readableBytes > 0 { chunk = buffer }
            if failure != 0 {
                ending = .some(NearbyError.ioFailure(path: name, reason: String(cString: strerror(failure))))
            } else if ended {
                ending = .some(nil)
            }
        }
        let (again, leaving, wake) = state.withLock { state in
            if let chunk { state.chunks.append(chunk) }
            if let ending { state.ending = ending }
            let wake = chunk != nil || ending != nil ? state.wake : nil
            if wake != nil { state.wake = nil }
            let over = state.stopped || state.ending != nil
            let again = !over && state.chunks.count < ahead
            state.reading = again
            return (again, over, wake)
        }
        wake?.settle(())
        if again { submit() } else if leaving { leave() }
    }

    private func leave() {
        let first = state.withLock { state in
            defer { state.finished = true }
            return !state.finished
        }
        if first { left() }
    }
}
