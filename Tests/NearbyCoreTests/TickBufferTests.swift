import NIOPosix
import Testing
@testable import NearbyCore
@testable import NearbyBase

/// Output written on an event loop leaves once per tick; elsewhere, at once; never reordered.
@Suite struct TickBufferTests {
    final class Writes: Sendable {
        let log = Locked<[(Int32, String)]>([])
        func record(_ fd: Int32, _ text: String) { log.withLock { $0.append((fd, text)) } }
        var all: [(Int32, String)] { log.withLock { $0 } }
    }

    @Test func linesOfOneTickLeaveInOneWritePerDescriptor() async throws {
        let writes = Writes()
        let buffer = TickBuffer { writes.record($0, $1) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        try await loop.submit {
            for index in 0..<1000 { buffer.append("line \(index)\n", fd: 1) }
            buffer.append("to stderr\n", fd: 2)
            buffer.append("last\n", fd: 1)
            #expect(writes.all.isEmpty, "nothing leaves before the tick ends")
        }.get()
        try await loop.submit {}.get()
        let all = writes.all
        #expect(all.count == 3)
        #expect(all.first?.0 == 1 && all.first?.1 == (0..<1000).map { "line \($0)\n" }.joined())
        #expect(all.count == 3 && all[1] == (2, "to stderr\n") && all[2] == (1, "last\n"))
        try await group.shutdownGracefully()
    }

    /// `watch`'s capture loop: a turn's lines, on a plain thread, leave together when it ends.
    @Test func linesHeldOffTheLoopLeaveTogetherAtTheEnd() {
        let writes = Writes()
        let buffer = TickBuffer { writes.record($0, $1) }
        let other = TickBuffer { writes.record($0 + 10, $1) }
        TickBuffer.holding {
            for index in 0..<256 { buffer.append("packet \(index)\n", fd: 1) }
            other.append("frame\n", fd: 1)
            #expect(writes.all.isEmpty, "nothing leaves inside the body")
        }
        let all = writes.all
        #expect(all.count == 2)
        #expect(all.first?.0 == 1 && all.first?.1 == (0..<256).map { "packet \($0)\n" }.joined())
        #expect(all.last?.0 == 11 && all.last?.1 == "frame\n")
        buffer.append("after\n", fd: 1)
        #expect(writes.all.count == 3, "outside it, at once again")
    }

    @Test func offTheLoopALineLeavesAtOnceAfterWhatWaits() {
        let writes = Writes()
        let buffer = TickBuffer { writes.record($0, $1) }
        buffer.append("now\n", fd: 1)
        #expect(writes.all.count == 1 && writes.all.first?.1 == "now\n")
    }

    @Test func aBurstLeavesWithoutWaitingForTheTick() async throws {
        let writes = Writes()
        let buffer = TickBuffer { writes.record($0, $1) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try await group.next().submit {
            let line = String(repeating: "x", count: 1023) + "\n"
            for _ in 0..<(TickBuffer.burst / 1024) { buffer.append(line, fd: 1) }
            #expect(writes.all.count == 1)
        }.get()
        try await group.shutdownGracefully()
    }
}
