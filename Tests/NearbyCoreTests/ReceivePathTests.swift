import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#endif

/// The receiver's buffers come back for the next reads without ever being shared, and a file is
/// written and hashed on two queues with the same result as on one.
@Suite struct ReceivePathTests {
    private func bytes(_ count: Int, seed: Int) -> ByteBuffer {
        ByteBuffer(bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
    }

    @Test func aBufferGivenBackIsUsedForTheNextCopy() {
        let pool = BufferPool(limit: 2, largest: 1 << 20)
        let first = pool.copy(bytes(1000, seed: 1))
        let address = first.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        pool.recycle(consume first)
        #expect(pool.count == 1)
        let second = pool.copy(bytes(800, seed: 2))
        #expect(second == bytes(800, seed: 2))
        #expect(second.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } == address)
        #expect(pool.count == 0)
    }

    @Test func aBufferStillHeldElsewhereIsNeverOverwritten() {
        let pool = BufferPool(limit: 2, largest: 1 << 20)
        let kept = pool.copy(bytes(1000, seed: 3))
        pool.recycle(kept)  // given back too early: `kept` still reads it
        let next = pool.copy(bytes(1000, seed: 4))
        #expect(kept == bytes(1000, seed: 3))
        #expect(next == bytes(1000, seed: 4))
    }

    @Test func aPieceBiggerThanEveryHeldBufferGetsAFreshOneAndTheSmallestLeaves() {
        let pool = BufferPool(limit: 2, largest: 1 << 20)
        pool.recycle(pool.copy(bytes(1000, seed: 5)))
        let big = pool.copy(bytes(100_000, seed: 6))
        #expect(big == bytes(100_000, seed: 6))
        #expect(pool.count == 0)
        let address = big.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        pool.recycle(consume big)
        // A smaller piece goes into the big buffer: it fits.
        let small = pool.copy(bytes(500, seed: 7))
        #expect(small == bytes(500, seed: 7))
        #expect(small.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } == address)
    }

    @Test func thePoolIsBounded() {
        let pool = BufferPool(limit: 2, largest: 64 << 10)
        pool.recycle(ByteBuffer(bytes: [UInt8](repeating: 0, count: 1000)))
        pool.recycle(ByteBuffer(bytes: [UInt8](repeating: 0, count: 1000)))
        pool.recycle(ByteBuffer(bytes: [UInt8](repeating: 0, count: 1000)))
        #expect(pool.count == 2)
        let big = BufferPool(limit: 2, largest: 64 << 10)
        big.recycle(ByteBuffer(bytes: [UInt8](repeating: 0, count: 100 << 10)))
        #expect(big.count == 0)
    }

    @Test func aFileWrittenAndHashedOnTwoQueuesIsWhole() async throws {
        let path = NSTemporaryDirectory() + "nearby-writer-\(UUID().uuidString)"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(descriptor >= 0)
        defer { unlink(path) }
        let writer = FileWriter(descriptor: descriptor, hasher: SHA256())
        // More than the writer may hold at once, in pieces of uneven sizes.
        let whole = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom")).read(upToCount: 3 * FileWriter.ahead / 2) ?? Data()
        var offset = 0
        var index = 0
        while offset < whole.count {
            let count = min(70_000 + index * 977, whole.count - offset)
            let piece = BufferPool.received.copy(ByteBuffer(bytes: whole[offset..<offset + count]))
            #expect(await writer.write(piece, at: UInt64(offset)) == 0)
            offset += count
            index += 1
        }
        let (hasher, failure) = await writer.finish()
        writer.close()
        #expect(failure == 0)
        #expect(whole.count == 3 * FileWriter.ahead / 2)
        #expect(hasher.finalize() == SHA256.hash(data: whole))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == whole)
    }
}
