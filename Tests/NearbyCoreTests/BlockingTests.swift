import Crypto
import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// Blocking work on NIO's thread pool: cancellation reaches a running job, and a file's jobs run in order.
@Suite struct BlockingTests {
    /// Ctrl-C never waits for a whole-file hash: the caller's cancellation stops the job at its
    /// next step. (The job's own bound, a minute, is never reached when cancellation works.)
    @Test func cancellingTheCallerStopsTheJobAtItsNextStep() async throws {
        let started = OneShot<Void>()
        let stopped = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                try? await Blocking.run { cancellation -> Bool in
                    started.settle(())
                    let bound = ContinuousClock.now + .seconds(60)
                    while !cancellation.isCancelled, ContinuousClock.now < bound { usleep(1000) }
                    return cancellation.isCancelled
                }
            }
            _ = await started.wait()
            group.cancelAll()
            return await group.next() ?? nil
        }
        #expect(stopped == true)
    }

    @Test func aCancelledHashReadsNoFurther() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-blocking-\(UUID().uuidString)").path
        let bytes = [UInt8](repeating: 7, count: 3 * Transfer.chunk + 5)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var whole = SHA256()
        #expect(Transfer.hash(fd, count: UInt64(bytes.count), into: &whole, cancellation: Blocking.Cancellation()))
        #expect(Transfer.hex(whole.finalize()) == Transfer.hex(SHA256.hash(data: bytes)))
        let cancelled = Blocking.Cancellation()
        cancelled.cancel()
        var none = SHA256()
        #expect(!Transfer.hash(fd, count: UInt64(bytes.count), into: &none, cancellation: cancelled))
    }

    @Test func aSerialQueueRunsItsJobsInOrderOneAtATime() async {
        let serial = Blocking.Serial()
        let seen = Locked<(order: [Int], running: Int, overlapped: Bool)>(([], 0, false))
        let done = OneShot<Void>()
        for index in 0..<500 {
            serial.async {
                seen.withLock { state in
                    state.running += 1
                    if state.running > 1 { state.overlapped = true }
                }
                seen.withLock { state in
                    state.order.append(index)
                    state.running -= 1
                }
                if index == 499 { done.settle(()) }
            }
        }
        _ = await done.wait()
        let (order, _, overlapped) = seen.withLock { $0 }
        #expect(order == Array(0..<500))
        #expect(!overlapped)
    }
}
