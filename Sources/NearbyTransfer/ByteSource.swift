import Foundation
import NIOCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a stream's outgoing bytes come from: stdin, or a client's control connection. A source has
/// exactly one reader (the stream's sending task).
package protocol ByteSource: Sendable {
    /// The next chunk, or nil at the end.
    func next() async throws -> ByteBuffer?
}

/// Where a stream's incoming bytes go: stdout, or a client's control connection.
package protocol ByteSink: Sendable {
    func write(_ buffer: ByteBuffer) async throws
    /// The other side finished: close (stdout) or half-close (a connection).
    func finish() async
}

/// Reads a file descriptor (stdin) on the descriptors' pool (`DescriptorReader`), a few chunks ahead
/// at most: blocking reads never occupy the async runtime's threads, memory stays bounded, and a
/// stdin that never sends anything holds up neither Ctrl-C nor anyone else's reads. Nothing is read
/// before the first `next()`, so a stream that fails to open consumes none of its input.
package final class DescriptorSource: ByteSource, Sendable {
    private let reader: DescriptorReader
    static let readAhead = 4

    /// 512 KiB by default, two data frames: a file on stdin costs 2,048 reads and wake-ups of the
    /// stream's task per GiB, not 4,096 (a pipe gives less per read: `fill`).
    package init(fd: Int32, chunk: Int = 512 << 10) {
        reader = DescriptorReader(fd: fd, ahead: Self.readAhead, name: "stdin") { fd in Self.block(fd, chunk) }
    }

    /// The next chunk; nil at the end of the input, or once the reading task is cancelled.
    package func next() async throws -> ByteBuffer? {
        switch try await reader.next() {
        case let .chunk(chunk): return chunk
        case .end, .stopped: return nil
        }
    }

    /// One block of up to `chunk` bytes from `fd` in a buffer of its own (`fill`): the bytes, the
    /// errno that stopped the read (0 if none) and whether the input ended.
    static func block(_ fd: Int32, _ chunk: Int) -> (ByteBuffer, failure: Int32, ended: Bool) {
        var buffer = ByteBufferAllocator().buffer(capacity: chunk)
        var failure: Int32 = 0
        var ended = false
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: chunk) { pointer in
            fill(fd, pointer.baseAddress, chunk, failure: &failure, ended: &ended)
        }
        return (buffer, failure, ended)
    }

    /// Reads at least one byte (blocking), then on while more is there at once (a pipe gives at
    /// most what it holds, 64 KiB, per read): chunks as large as the input allows, without waiting
    /// for bytes that have not come. Returns the bytes read; sets `ended` at the end of the input.
    static func fill(_ fd: Int32, _ base: UnsafeMutableRawPointer?, _ chunk: Int, failure: inout Int32, ended: inout Bool) -> Int {
        guard let base else { return 0 }
        var filled = 0
        while filled < chunk {
            if filled > 0 {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 0) > 0 else { break }
            }
            let n = read(fd, base + filled, chunk - filled)
            if n < 0, errno == EINTR { continue }
            if n < 0 {
                failure = errno
                break
            }
            if n == 0 {
                ended = true
                break
            }
            filled += n
        }
        return filled
    }
}

/// Writes to a file descriptor (stdout) from a serial queue of its own, up to `ahead` bytes behind
/// the caller: the stream's next bytes arrive and decrypt while the last ones are still being
/// written, and memory stays bounded. A failed write fails the next `write`; `finish` waits for
/// every write and closes the descriptor, so the reader of a pipe sees the end.
package final class DescriptorSink: ByteSink {
    private let fd: Int32
    private let queue = Blocking.Serial()
    /// Bytes handed to the queue and not yet written may not exceed this.
    static let ahead = 4 << 20
    private let room = SendCredit(initial: DescriptorSink.ahead)
    private let failure = Locked<Int32>(0)

    package init(fd: Int32) { self.fd = fd }

    package func write(_ buffer: ByteBuffer) async throws {
        try check()
        guard await room.take(exactly: buffer.readableBytes) else { throw CancellationError() }
        try check()
        queue.async { [self] in
            if failure.withLock({ $0 }) == 0 {
                let error = buffer.withUnsafeReadableBytes { writeAll(fd, $0) }
                if error != 0 { failure.withLock { $0 = error } }
            }
            room.add(buffer.readableBytes)
            BufferPool.received.recycle(buffer)
        }
    }

    private func check() throws {
        let error = failure.withLock { $0 }
        if error != 0 { throw NearbyError.ioFailure(path: "stdout", reason: String(cString: strerror(error))) }
    }

    package func finish() async {
        let fd = self.fd
        let closed = OneShot<Void>()
        queue.async {
            close(fd)
            closed.settle(())
        }
        _ = await closed.waitThroughCancellation()
    }
}

/// The raw bytes of a control connection after its request line.
package final class ChannelSource: ByteSource, @unchecked Sendable {
    /// Only the one reader touches these.
    private var leftover: ByteBuffer?
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator

    package init(leftover: ByteBuffer?, iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) {
        self.leftover = leftover.flatMap { $0.readableBytes > 0 ? $0 : nil }
        self.iterator = iterator
    }

    package func next() async throws -> ByteBuffer? {
        if let first = leftover {
            leftover = nil
            return first
        }
        return try await iterator.next()
    }
}
