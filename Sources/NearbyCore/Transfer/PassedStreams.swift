import Dispatch
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A descriptor a stream's client passed to the node (`DescriptorPassing`): its stdin or stdout,
/// charged to the node's `ResourceBudget` from before it arrived until it is closed. Closed once,
/// by whoever ends first (the stream, the client leaving, the node stopping); `handOver` gives the
/// descriptor to an owner that closes it itself, the charge staying here until `close`.
final class PassedDescriptor: Sendable {
    let fd: Int32
    let mode: mode_t
    private let budget: ResourceBudget
    private let state = Mutex<(closed: Bool, handedOver: Bool)>((false, false))

    /// `fd` is already charged to `budget` (`ResourceBudget.takeDescriptors`).
    init(_ fd: Int32, budget: ResourceBudget) {
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

    /// Waits (100 ms at most) until the descriptor is ready for `events`; the caller checks
    /// whether it should go on, and asks again.
    func ready(for events: Int16) -> Bool {
        var waiting = pollfd(fd: fd, events: events, revents: 0)
        return poll(&waiting, 1, 100) != 0
    }
}

/// A stream's client's stdin, passed to the node and read here (a pipe, a socket, a device; a
/// regular file goes to `PassedInputSource`, which reads it in large blocks). A thread of its own
/// reads a few chunks ahead, waiting in poll(2) a tenth of a second at a time, so `stop()` ends it
/// and closes the descriptor soon whatever the writer at the other end does.
final class PassedStreamSource: ByteSource, @unchecked Sendable {
    private let descriptor: PassedDescriptor
    static let chunk = 256 << 10
    static let readAhead = 4
    /// Only the one reader touches it.
    private var iterator: AsyncThrowingStream<ByteBuffer, any Error>.AsyncIterator?
    private let room = DispatchSemaphore(value: 0)
    private let state = Mutex<(started: Bool, stopped: Bool)>((false, false))
    private let counted = Mutex<UInt64>(0)

    init(_ descriptor: PassedDescriptor) { self.descriptor = descriptor }

    /// Bytes handed to the stream.
    var count: UInt64 { counted.withLock { $0 } }

    func next() async throws -> ByteBuffer? {
        let start: Bool = try state.withLock { state in
            guard !state.stopped else { throw NearbyError.cancelled("the stream's client left") }
            defer { state.started = true }
            return !state.started
        }
        var current = start ? run() : iterator
        guard current != nil else { return nil }
        let value = try await current?.next()
        iterator = current
        // The stream's iterator ends at a cancellation as at the end: that is no end of the input.
        if value == nil, Task.isCancelled || stopped { throw NearbyError.cancelled("the stream's client left") }
        room.signal()
        if let value { counted.withLock { $0 += UInt64(value.readableBytes) } }
        return value
    }

    /// No more reads: the reading thread leaves and closes the descriptor (at once when it never ran).
    func stop() {
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        if started { room.signal() } else { descriptor.close() }
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func run() -> AsyncThrowingStream<ByteBuffer, any Error>.AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
        for _ in 0..<Self.readAhead { room.signal() }
        Thread.detachNewThread { [self] in
            defer { descriptor.close() }
            while true {
                room.wait()
                while !stopped, !descriptor.ready(for: Int16(POLLIN)) {}
                if stopped {
                    continuation.finish(throwing: NearbyError.cancelled("the stream's client left"))
                    return
                }
                let (buffer, readFailure, ended) = DescriptorSource.block(descriptor.fd, Self.chunk)
                var failure = readFailure
                let count = buffer.readableBytes
                if failure == EAGAIN || failure == EWOULDBLOCK, count > 0 || !ended { failure = 0 }
                if DescriptorSource.deliver(buffer, failure: failure, ended: ended, to: continuation) { return }
                // Nothing read (a spurious wake-up): the chunk's room is not used.
                if count == 0 { room.signal() }
            }
        }
        return stream.makeAsyncIterator()
    }
}

/// A stream's client's stdout, passed to the node and written here, from a thread of its own (with
/// SIGPIPE blocked: a reader that left is an error of this stream, never the node's death), up to
/// `ahead` bytes behind the stream. `finish` writes what is queued, closes the descriptor and then
/// runs `after` (the client is told, and closes its own copy); `stop` drops what is queued and
/// closes it, as soon as a blocked write notices (a tenth of a second).
final class PassedOutput: ByteSink {
    private let descriptor: PassedDescriptor
    private let after: @Sendable () async -> Void
    static let ahead = 4 << 20
    private let room = CreditGate(initial: PassedOutput.ahead)
    private struct State {
        var pending: [ByteBuffer] = []
        var failure: Int32 = 0
        var finishing = false
        var stopped = false
        var written: UInt64 = 0
    }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let done = OneShot<Void>()

    init(_ descriptor: PassedDescriptor, after: @escaping @Sendable () async -> Void = {}) {
        self.descriptor = descriptor
        self.after = after
        Thread.detachNewThread { [self] in run() }
    }

    /// Bytes written to the client's stdout.
    var count: UInt64 { state.withLock { $0.written } }

    func write(_ buffer: ByteBuffer) async throws {
        try check()
        guard await room.take(exactly: buffer.readableBytes) else { throw CancellationError() }
        try check()
        state.withLock { $0.pending.append(buffer) }
        wake.signal()
    }

    private func check() throws {
        let (failure, stopped) = state.withLock { ($0.failure, $0.stopped) }
        if failure != 0 { throw NearbyError.ioFailure(path: "stdout", reason: String(cString: strerror(failure))) }
        if stopped { throw NearbyError.cancelled("the stream's client left") }
    }

    func finish() async {
        state.withLock { $0.finishing = true }
        wake.signal()
        await withTaskCancellationHandler {
            _ = await done.wait()
        } onCancel: {
            stop()
        }
        await after()
    }

    /// Drops what is queued; the descriptor closes once the writing thread has left.
    func stop() {
        state.withLock { $0.stopped = true }
        room.close()
        wake.signal()
    }

    private enum Step {
        case write(ByteBuffer)
        case wait
        case leave
    }

    private func run() {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        defer {
            descriptor.close()
            done.settle(())
        }
        while true {
            let step: Step = state.withLock { state in
                if state.stopped { return .leave }
                if !state.pending.isEmpty { return .write(state.pending.removeFirst()) }
                return state.finishing ? .leave : .wait
            }
            switch step {
            case .leave: return
            case .wait: wake.wait()
            case let .write(buffer):
                let error = buffer.withUnsafeReadableBytes { writeAll($0) }
                state.withLock { state in
                    if error == 0 { state.written += UInt64(buffer.readableBytes) }
                    if error != 0, state.failure == 0 { state.failure = error }
                }
                room.add(buffer.readableBytes)
                BufferPool.received.recycle(buffer)
                if error != 0 {
                    // Nothing more reaches the reader: what is queued is given back, unwritten.
                    let dropped = state.withLock { state in
                        defer { state.pending = [] }
                        return state.pending.reduce(0) { $0 + $1.readableBytes }
                    }
                    room.add(dropped)
                }
            }
        }
    }

    /// Writes all of `bytes`, waiting for room in poll(2); errno on failure, ECANCELED when stopped.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let base = bytes.baseAddress else { return 0 }
        var done = 0
        while done < bytes.count {
            if state.withLock({ $0.stopped }) { return ECANCELED }
            guard descriptor.ready(for: Int16(POLLOUT)) else { continue }
            let n: Int
            #if os(Linux)
            n = descriptor.isSocket
                ? send(descriptor.fd, base + done, bytes.count - done, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                : Glibc.write(descriptor.fd, base + done, bytes.count - done)
            #else
            n = Darwin.write(descriptor.fd, base + done, bytes.count - done)
            #endif
            if n < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                return code
            }
            done += n
        }
        return 0
    }
}
