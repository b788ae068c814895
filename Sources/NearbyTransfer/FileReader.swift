import Crypto
import NIOCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and hashes an outgoing file on a queue of its own (`Blocking.Serial`), `ahead` blocks before the sender: the
/// next block is read and goes through SHA-256 while the last one is encrypted and in flight, and
/// the event loop never waits for the disk. It owns the descriptor from `init` on and closes it on
/// its queue, after the last read. A small file (`inline`) is read and hashed at once, in `start`,
/// on the caller's thread: one `pread` of a few KiB costs less than the queue's hops.
final class FileReader: Sendable {
    enum Failure: Error { case shorter, io(Int32) }

    /// Four blocks of 512 KiB, 2 MiB: with 1 MiB ahead, the sender waited on the disk and SHA-256
    /// in turns with the network (bench/ab.sh, 9 rounds with the writer's 8 MiB: median ×1.08 for
    /// send-file).
    static let ahead = 4
    /// What one `pread` reads: one frame's worth (`Transfer.chunk`), so a GiB costs 2,048 reads,
    /// queue hops and wake-ups of the sending task, not 4,096. Below glibc's mmap threshold
    /// (`MemoryBudget.returnBigBlocks`), so the heap reuses it.
    static let block = Transfer.chunk
    private let descriptor: Int32
    private let queue = Blocking.Serial()
    private let stopped = Locked(false)
    /// Touched only on the queue.
    private final class Reading: @unchecked Sendable {
        var hasher = SHA256()
        var position: UInt64 = 0
        var end: UInt64 = 0
        var done = false
        var continuation: AsyncThrowingStream<ByteBuffer, any Error>.Continuation?
    }
    private let reading = Reading()
    /// Only the one sending task touches this.
    private final class Consumer: @unchecked Sendable {
        var iterator: AsyncThrowingStream<ByteBuffer, any Error>.AsyncIterator?
    }
    private let consumer = Consumer()

    /// Whether chunks go through SHA-256 (a file sent); a stream's input read for a client is not hashed.
    private let hashing: Bool

    /// Read at once in `start` (a small file), not on the queue.
    private let inline: Bool
    /// The inline read: its one block, or its failure; taken by `next`.
    private final class Inline: @unchecked Sendable {
        var result: Result<ByteBuffer, Failure>?
    }
    private let taken = Inline()

    init(descriptor: Int32, hashing: Bool = true, inline: Bool = false) {
        self.descriptor = descriptor
        self.hashing = hashing
        self.inline = inline
    }

    /// Starts reading at `offset` (the receiver has what lies before; `hasher` has hashed it) up to
    /// `end`.
    func start(at offset: UInt64, end: UInt64, hasher: SHA256) {
        if inline { return readInline(from: offset, to: end, hasher: hasher) }
        let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
        consumer.iterator = stream.makeAsyncIterator()
        // Nothing runs on the queue yet: set up here, the queue sees it from its first block on.
        reading.hasher = hasher
        reading.position = offset
        reading.end = end
        reading.continuation = continuation
        if offset >= end { finishReading(nil) }
        for _ in 0..<Self.ahead { queue.async { [self] in readOne() } }
    }

    /// The next chunk, nil after the last one.
    func next() async throws -> ByteBuffer? {
        if inline {
            defer { taken.result = nil }
            return try taken.result?.get()
        }
        guard var iterator = consumer.iterator else { return nil }
        let chunk = try await iterator.next()
        consumer.iterator = iterator
        if chunk != nil { queue.async { [self] in readOne() } }
        return chunk
    }

    /// The hash of everything read, once every chunk was taken.
    func hash() async -> SHA256 {
        if inline { return reading.hasher }
        let hashed = OneShot<Transfer.HashState>()
        queue.async { [reading] in hashed.settle(Transfer.HashState(hasher: reading.hasher)) }
        // Settled by the queue, never abandoned: the fallback is never taken.
        return await hashed.waitThroughCancellation()?.hasher ?? SHA256()
    }

    /// No more reads; the descriptor is closed after the one under way, if any.
    func close() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if inline {
            if first { Transfer.closeDescriptor(descriptor) }
            return
        }
        queue.async { [self] in
            finishReading(nil)
            Transfer.closeDescriptor(descriptor)
        }
    }

    /// The whole of a small file, read and hashed at once.
    private func readInline(from offset: UInt64, to end: UInt64, hasher: SHA256) {
        reading.hasher = hasher
        guard offset < end else { return }
        let (buffer, failure) = read(Int(end - offset), at: offset)
        if failure != 0 { return taken.result = .failure(.io(failure)) }
        guard buffer.readableBytes > 0 else { return taken.result = .failure(.shorter) }
        if hashing { buffer.withUnsafeReadableBytes { reading.hasher.update(bufferPointer: $0) } }
        taken.result = .success(buffer)
    }

    /// One `pread` of up to `want` bytes at `offset` (retried on EINTR): what it read, and its errno.
    private func read(_ want: Int, at offset: UInt64) -> (ByteBuffer, Int32) {
        var buffer = ByteBufferAllocator().buffer(capacity: want)
        var failure: Int32 = 0
        _ = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
            while true {
                let n = pread(descriptor, pointer.baseAddress, want, off_t(offset))
                if n < 0, errno == EINTR { continue }
                if n < 0 { failure = errno }
                return max(0, n)
            }
        }
        return (buffer, failure)
    }

    private func readOne() {
        guard !reading.done, !stopped.withLock({ $0 }) else { return }
        let (buffer, failure) = read(Int(min(UInt64(Self.block), reading.end - reading.position)), at: reading.position)
        if failure != 0 { return finishReading(Failure.io(failure)) }
        let got = buffer.readableBytes
        guard got > 0 else { return finishReading(Failure.shorter) }
        if hashing { buffer.withUnsafeReadableBytes { reading.hasher.update(bufferPointer: $0) } }
        reading.position += UInt64(got)
        reading.continuation?.yield(buffer)
        if reading.position >= reading.end { finishReading(nil) }
    }

    private func finishReading(_ failure: Failure?) {
        guard !reading.done else { return }
        reading.done = true
        reading.continuation?.finish(throwing: failure)
        reading.continuation = nil
    }
}
