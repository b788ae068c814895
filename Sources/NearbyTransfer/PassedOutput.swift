import Foundation
import NIOCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A descriptor a stream's client passed to the node (`DescriptorPassing`): its stdin or stdout,
/// charged to the node's `ResourceBudget` from before it arrived until it is closed. Closed once,
/// by whoever ends first (the stream, the client leaving, the node stopping); `handOver` gives the
/// descriptor to an owner that closes it itself, the charge staying here until `close`.
package final class PassedDescriptor: Sendable {
    let fd: Int32
    let mode: mode_t
    private let budget: ResourceBudget
    private let state = Locked<(closed: Bool, handedOver: Bool)>((false, false))

    /// `fd` is already charged to `budget` (`ResourceBudget.takeDescriptors`).
    package init(_ fd: Int32, budget: ResourceBudget) {
        self.budget = budget
        var info = stat()
        mode = fstat(fd, &info) == 0 ? info.st_mode & S_IFMT : 0
        #if os(Linux)
        // A larger pipe (1 MiB, the most an unprivileged process may ask for by default): a
        // quarter of the wake-ups and system calls per GiB on both of its ends.
        if mode == S_IFIFO { _ = fcntl(fd, Self.setPipeSize, Int32(1 << 20)) }
        // A pipe written from here gets an open file of its own, non-blocking: the client's (and
        // whatever shares it: the shell's next command) stays as it was, and a reader that stopped
        // reading can never hold a thread of the node in write(2) after the stream ended.
        if mode == S_IFIFO {
            let own = open("/proc/self/fd/\(fd)", (fcntl(fd, F_GETFL) & O_ACCMODE) | O_NONBLOCK | O_CLOEXEC)
            if own >= 0 {
                Glibc.close(fd)
                self.fd = own
                return
            }
        }
        #endif
        self.fd = fd
    }

    var isRegularFile: Bool { mode == S_IFREG }
    var isSocket: Bool { mode == S_IFSOCK }
    var isTerminal: Bool { isatty(fd) == 1 }

    /// Marks the descriptor as closed by another owner (a `FileReader`); returns it.
    func handOver() -> Int32 {
        state.withLock { $0.handedOver = true }
        return fd
    }

    /// Closes the descriptor (unless handed over) and gives its charge back; once.
    func close() {
        let (first, handedOver) = state.withLock { state in
            defer { state.closed = true }
            return (!state.closed, state.handedOver)
        }
        guard first else { return }
        #if canImport(Glibc)
        if !handedOver { Glibc.close(fd) }
        #else
        if !handedOver { Darwin.close(fd) }
        #endif
        budget.giveDescriptors(1)
    }

    deinit { close() }

    #if os(Linux)
    /// F_SETPIPE_SZ (Linux's fcntl.h, behind _GNU_SOURCE, which Swift's Glibc does not see).
    private static let setPipeSize: Int32 = 1031
    #endif
}

/// A stream's client's stdin, passed to the node and read here (a pipe, a socket, a device; a
/// regular file goes to `PassedInputSource`, which reads it in large blocks), a few chunks ahead on
/// the descriptors' pool (`DescriptorReader`): `stop()` ends the reading within a turn (a tenth of
/// a second) and closes the descriptor, whatever the writer at the other end does.
package final class PassedStreamSource: ByteSource, Sendable {
    private let reader: DescriptorReader
    static let chunk = 256 << 10
    static let readAhead = 4
    private let counted = Locked<UInt64>(0)

    package init(_ descriptor: PassedDescriptor) {
        reader = DescriptorReader(fd: descriptor.fd, ahead: Self.readAhead, name: "stdin", read: { fd in
            let (buffer, failure, ended) = DescriptorSource.block(fd, Self.chunk)
            // Its own non-blocking open file (`PassedDescriptor`): nothing there yet is no failure.
            let spurious = (failure == EAGAIN || failure == EWOULDBLOCK) && (buffer.readableBytes > 0 || !ended)
            return (buffer, spurious ? 0 : failure, ended)
        }, left: { descriptor.close() })
    }

    /// Bytes handed to the stream.
    package var count: UInt64 { counted.withLock { $0 } }

    package func next() async throws -> ByteBuffer? {
        switch try await reader.next() {
        case let .chunk(chunk):
            counted.withLock { $0 += UInt64(chunk.readableBytes) }
            return chunk
        case .end: return nil
        // A cancellation or a stop is no end of the input.
        case .stopped: throw NearbyError.cancelled("the stream's client left")
        }
    }

    /// No more reads: the reading leaves within a turn and closes the descriptor (at once when it never ran).
    package func stop() { reader.stop() }
}

/// A stream's client's stdout, passed to the node and written here on the descriptors' pool (with
/// SIGPIPE blocked: a reader that left is an error of this stream, never the node's death), up to
/// `ahead` bytes behind the stream, one job at a time and in order. A job that finds no room waits a
/// turn (a tenth of a second) and goes to the back of the pool's queue. `finish` writes what is
/// queued, closes the descriptor and then runs `after` (the client is told, and closes its own
/// copy); `stop` drops what is queued and closes it at the next turn.
package final class PassedOutput: ByteSink {
    private let descriptor: PassedDescriptor
    private let after: @Sendable () async -> Void
    static let ahead = 4 << 20
    private let room = SendCredit(initial: PassedOutput.ahead)
    private struct State {
        var pending = CircularBuffer<ByteBuffer>()
        var failure: Int32 = 0
        var finishing = false
        var stopped = false
        var written: UInt64 = 0
        /// Bytes of the first pending buffer written so far.
        var frontSent = 0
        /// A job is queued or running on the pool.
        var writing = false
    }
    private let state = Locked(State())
    private let done = OneShot<Void>()

    package init(_ descriptor: PassedDescriptor, after: @escaping @Sendable () async -> Void = {}) {
        self.descriptor = descriptor
        self.after = after
    }

    /// Bytes written to the client's stdout.
    package var count: UInt64 { state.withLock { $0.written } }

    package func write(_ buffer: ByteBuffer) async throws {
        try check()
        guard await room.take(exactly: buffer.readableBytes) else { throw CancellationError() }
        try check()
        wake { $0.pending.append(buffer) }
    }

    private func check() throws {
        let (failure, stopped) = state.withLock { ($0.failure, $0.stopped) }
        if failure != 0 { throw NearbyError.ioFailure(path: "stdout", reason: String(cString: strerror(failure))) }
        if stopped { throw NearbyError.cancelled("the stream's client left") }
    }

    package func finish() async {
        wake { $0.finishing = true }
        await withTaskCancellationHandler {
            _ = await done.wait()
        } onCancel: {
            stop()
        }
        await after()
    }

    /// Drops what is queued; the descriptor closes at the writing job's next turn.
    package func stop() {
        wake { $0.stopped = true }
        room.close()
    }

    /// Changes the state and starts a job unless one is queued or running.
    private func wake(_ change: (inout State) -> Void) {
        let start = state.withLock { state in
            change(&state)
            defer { state.writing = true }
            return !state.writing
        }
        if start { Blocking.descriptors.submit { [self] _ in turn() } }
    }

    private enum Step {
        case write(ByteBuffer)
        case idle
        case leave
    }

    /// One turn on the pool: as much of the first buffer as the descriptor takes within a turn; then
    /// to the back of the queue while there is more, or the descriptor closed when it is over.
    private func turn() {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        let step: Step = state.withLock { state in
            if state.stopped { return .leave }
            if let first = state.pending.first { return .write(first) }
            if state.finishing { return .leave }
            state.writing = false
            return .idle
        }
        switch step {
        case .idle: return
        case .leave:
            descriptor.close()
            done.settle(())
            return
        case var .write(buffer):
            let (sent, error) = writeSome(&buffer)
            room.add(sent)
            let dropped: Int = state.withLock { state in
                if error == 0 {
                    state.frontSent += sent
                    guard buffer.readableBytes == 0 else {
                        // Part of it went (or none: no room within the turn); the rest at the next turn.
                        state.pending[state.pending.startIndex] = buffer
                        return 0
                    }
                    state.written += UInt64(state.frontSent)
                    state.frontSent = 0
                    _ = state.pending.popFirst()
                    return 0
                }
                if state.failure == 0 { state.failure = error }
                state.frontSent = 0
                // Nothing more reaches the reader: what is queued is given back, unwritten.
                defer { state.pending.removeAll() }
                return state.pending.reduce(0) { $0 + $1.readableBytes } - sent
            }
            room.add(dropped)
            if error != 0 || buffer.readableBytes == 0 { BufferPool.received.recycle(buffer) }
            Blocking.descriptors.submit { [self] _ in turn() }
        }
    }

    /// Writes what the descriptor takes of `buffer` within a turn, moving its reader index: the bytes
    /// written, and errno on failure (0 otherwise).
    private func writeSome(_ buffer: inout ByteBuffer) -> (sent: Int, error: Int32) {
        var sent = 0
        while buffer.readableBytes > 0, !state.withLock({ $0.stopped }) {
            guard Blocking.ready(descriptor.fd, for: Int16(POLLOUT)) else { break }
            let n: Int = buffer.withUnsafeReadableBytes { bytes in
                guard let base = bytes.baseAddress else { return 0 }
                #if os(Linux)
                return descriptor.isSocket
                    ? send(descriptor.fd, base, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                    : Glibc.write(descriptor.fd, base, bytes.count)
                #else
                return Darwin.write(descriptor.fd, base, bytes.count)
                #endif
            }
            if n < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                return (sent, code)
            }
            buffer.moveReaderIndex(forwardBy: n)
            sent += n
        }
        return (sent, 0)
    }
}
