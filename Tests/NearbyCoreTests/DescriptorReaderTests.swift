import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// Long-lived readers on the descriptors' pool (`DescriptorReader`): a reader whose input never
/// comes lets its consumer go at once when cancelled and leaves the pool within a turn, and more
/// idle readers than the pool has threads starve nobody. Bounds are generous and every wait ends as
/// soon as its condition holds: a loaded machine makes these slower, never wrong.
@Suite struct DescriptorReaderTests {
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(Foundation.pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    private static func reader(_ fd: Int32, left: @escaping @Sendable () -> Void = {}) -> DescriptorReader {
        DescriptorReader(fd: fd, ahead: 4, name: "test", read: { DescriptorSource.block($0, 64 << 10) }, left: left)
    }

    /// Ctrl-C never waits for a read that never returns: the consumer's cancellation ends `next()`
    /// at once, and the reading leaves the pool (and `left` runs) within a turn.
    @Test func aCancelledConsumerOfASilentInputIsLetGoAndTheReadingLeaves() async throws {
        let (readEnd, writeEnd) = try Self.pipe()
        defer { close(readEnd); close(writeEnd) }
        let left = OneShot<Void>()
        let reader = Self.reader(readEnd) { left.settle(()) }
        // One byte, so the reading runs; then the pipe stays silent and the reading waits on it.
        #expect(Foundation.write(writeEnd, [UInt8(1)], 1) == 1)
        guard case let .chunk(first) = try await reader.next() else { Issue.record("no first chunk"); return }
        #expect(first.readableBytes == 1)
        let outcome = await withTaskGroup(of: String.self) { group in
            group.addTask {
                switch try? await reader.next() {
                case .stopped?: "stopped"
                default: "other"
                }
            }
            group.cancelAll()
            return await group.next() ?? "none"
        }
        #expect(outcome == "stopped")
        // A turn is a tenth of a second; a minute is the bound of a machine that is very busy.
        #expect(await left.wait(until: .now + .seconds(60)) != nil)
    }

    /// Twice as many silent readers as the pool has threads, each waiting on the pool: a reader whose
    /// input arrives still gets all of it, in order, and its end.
    @Test func silentReadersStarveNobody() async throws {
        var silent: [(read: Int32, write: Int32, reader: DescriptorReader)] = []
        for _ in 0..<8 {
            let (readEnd, writeEnd) = try Self.pipe()
            silent.append((readEnd, writeEnd, Self.reader(readEnd)))
        }
        let (readEnd, writeEnd) = try Self.pipe()
        defer {
            close(readEnd)
            for pipe in silent { close(pipe.read); close(pipe.write) }
        }
        let busy = Self.reader(readEnd)
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let got: [UInt8] = await withTaskGroup(of: [UInt8]?.self) { group in
            for pipe in silent { group.addTask { _ = try? await pipe.reader.next(); return nil } }
            // More than a pipe holds: written on the blocking pool while the reader takes it.
            group.addTask {
                _ = try? await Blocking.run { _ in
                    bytes.withUnsafeBytes { all in
                        guard let base = all.baseAddress else { return }
                        var done = 0
                        while done < all.count {
                            let n = Foundation.write(writeEnd, base + done, all.count - done)
                            if n <= 0 { break }
                            done += n
                        }
                    }
                    close(writeEnd)
                }
                return nil
            }
            var got: [UInt8] = []
            while case let .chunk(chunk)? = try? await busy.next() { got += chunk.readableBytesView }
            for pipe in silent { pipe.reader.stop() }
            for await _ in group {}
            return got
        }
        #expect(got.count == bytes.count)
        #expect(got == bytes)
    }
}
