import Crypto
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and hashes an outgoing file on a queue of its own (`Blocking.Serial`), `ahead` blocks before the sender: the
/// next block is read and goes through SHA-256 while the last one is encrypted and in flight, and
/// the event loop never waits for the disk. It owns the descriptor from `init` on and closes it on
/// its queue, after the last read.
final class FileReader: Sendable {
    enum Failure: Error { case shorter, io(Int32) }

    /// Four blocks of 512 KiB, 2 MiB: with 1 MiB ahead, the sender waited on the disk and SHA-256
    /// in turns with the network (bench/ab.sh, 9 rounds with the writer's 8 MiB: median ×1.08 for
    /// send-file).
    static let ahead = 4
    /// What one `pread` reads: two frames' worth (`Transfer.chunk`, which the sender slices it
    /// into), so a GiB costs 2,048 reads, queue hops and wake-ups of the sending task, not 4,096.
    /// Below glibc's mmap threshold (`MemoryBudget.returnBigBlocks`), so the heap reuses it.
    static let block = 2 * Transfer.chunk
    private let descriptor: Int32
    private let queue = Blocking.Serial()
    private let stopped = Mutex(false)
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

    init(descriptor: Int32, hashing: Bool = true) {
        self.descriptor = descriptor
        self.hashing = hashing
    }

    /// Starts reading at `offset` (the receiver has what lies before; `hasher` has hashed it) up to
    /// `end`.
    func start(at offset: UInt64, end: UInt64, hasher: SHA256) {
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
        guard var iterator = consumer.iterator else { return nil }
        let chunk = try await iterator.next()
        consumer.iterator = iterator
        if chunk != nil { queue.async { [self] in readOne() } }
        return chunk
    }

    /// The hash of everything read, once every chunk was taken.
    func hash() async -> SHA256 {
        await withCheckedContinuation { (continuation: CheckedContinuation<SHA256, Never>) in
            queue.async { [reading] in continuation.resume(returning: reading.hasher) }
        }
    }

    /// No more reads; the descriptor is closed after the one under way, if any.
    func close() {
        stopped.withLock { $0 = true }
        queue.async { [self] in
            finishReading(nil)
            Transfer.closeDescriptor(descriptor)
        }
    }

    private func readOne() {
        guard !reading.done, !stopped.withLock({ $0 }) else { return }
        let want = Int(min(UInt64(Self.block), reading.end - reading.position))
        var buffer = ByteBufferAllocator().buffer(capacity: want)
        var failure: Int32 = 0
        let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
            while true {
                let n = pread(descriptor, pointer.baseAddress, want, off_t(reading.position))
                if n < 0, errno == EINTR { continue }
                if n < 0 { failure = errno }
                return max(0, n)
            }
        }
        if failure != 0 { return finishReading(Failure.io(failure)) }
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
