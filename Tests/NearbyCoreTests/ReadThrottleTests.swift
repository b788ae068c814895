import Foundation
import NIOCore
import NIOEmbedded
import Synchronization
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire

/// The frame splitter's pacing of reads (`ReadThrottle`) on an `EmbeddedChannel`: a read the channel
/// asks for reaches the socket (`ReadCounter`, nearer the head) or is held, and why.
@Suite struct ReadThrottleTests {
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    private func channel(_ splitter: FrameSplitter) throws -> (EmbeddedChannel, ReadCounter) {
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([counter, splitter])
        return (channel, counter)
    }

    private func header(_ kind: Frame.Kind, length: Int) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeInteger(kind.rawValue)
        out.writeInteger(UInt32(0))
        out.writeInteger(UInt32(length))
        return out
    }

    @Test func aBigMessageTakesItsShareBeforeAnotherReadAndGivesItBackWhenWhole() throws {
        let budget = MemoryBudget(limit: 200_000)
        let pacing = ReadPacing()
        let (channel, counter) = try channel(FrameSplitter(pacing: pacing, frames: budget))
        let elsewhere = budget.take(150_000) {}  // another link's frame
        try channel.writeInbound(header(.message, length: 100_000))
        try channel.writeInbound(ByteBuffer(repeating: 7, count: 1000))
        #expect(budget.waiting == 1, "the message waits for room")
        channel.read()
        #expect(counter.reads == 0, "no read while it waits")
        #expect(pacing.isHeld)
        #expect(pacing.silence(.seconds(30)) == .zero, "the keepalive does not count the silence we made")
        budget.give(elsewhere)
        channel.embeddedEventLoop.run()
        #expect(counter.reads == 1, "granted: the held read goes on")
        #expect(!pacing.isHeld)
        #expect(budget.used == 100_000 + Frame.headerSize)
        try channel.writeInbound(ByteBuffer(repeating: 7, count: 99_000))
        let frame = try #require(try channel.readInbound(as: Frame.self))
        #expect(frame.kind == .message && frame.payload.readableBytes == 100_000)
        #expect(budget.used == 0, "the whole frame went up: its share is back")
        channel.read()
        #expect(counter.reads == 2)
        _ = try channel.finish()
    }

    /// A header cut between two reads: the frame still takes its share before the next read.
    @Test func aHeaderSplitAcrossReadsStillTakesItsShare() throws {
        let budget = MemoryBudget(limit: 1 << 20)
        let (channel, _) = try channel(FrameSplitter(frames: budget))
        let whole = header(.message, length: 300_000)
        try channel.writeInbound(whole.getSlice(at: 0, length: 4) ?? ByteBuffer())
        #expect(budget.used == 0)
        var rest = whole.getSlice(at: 4, length: 5) ?? ByteBuffer()
        rest.writeBytes([UInt8](repeating: 3, count: 500))
        try channel.writeInbound(rest)
        #expect(budget.used == 300_000 + Frame.headerSize)
        _ = try channel.finish()
        #expect(budget.used == 0)
    }

    @Test func smallFramesNeedNoShare() throws {
        let budget = MemoryBudget(limit: 1)
        let (channel, counter) = try channel(FrameSplitter(frames: budget))
        try channel.writeInbound(header(.message, length: 5000).getSlice(at: 0, length: 9) ?? ByteBuffer())
        channel.read()
        #expect(counter.reads == 1 && budget.used == 0)
        _ = try channel.finish()
    }

    @Test func aClosedLinkGivesItsShareBack() throws {
        let budget = MemoryBudget(limit: 1 << 20)
        let (channel, _) = try channel(FrameSplitter(frames: budget))
        try channel.writeInbound(header(.message, length: 500_000))
        try channel.writeInbound(ByteBuffer(repeating: 1, count: 10))
        #expect(budget.used == 500_000 + Frame.headerSize)
        _ = try channel.finish()
        #expect(budget.used == 0)
    }

    @Test func aFullOutputHoldsReadsInTheSessionOnly() throws {
        // Never opened: its room would be reported from the writer's thread, and an embedded
        // event loop is only for the thread that made it.
        let stuck = OutputQueueTests.Reader()
        let output = OutputQueue(limits: .init(bytes: 100, dropAt: 10_000)) { stuck.write($0, $1) }
        output.append(String(repeating: "x", count: 500) + "\n", fd: 1)
        #expect(output.isFull)

        let handshake = SessionPhase()
        let (before, beforeReads) = try channel(FrameSplitter(phase: handshake, output: output))
        before.read()
        #expect(beforeReads.reads == 1, "a handshake reads on")

        let (session, sessionReads) = try channel(FrameSplitter(phase: SessionPhase(inSession: true), output: output))
        session.read()
        #expect(sessionReads.reads == 0, "a link in session waits for the output")
        #expect(output.waiting == 1)
        _ = try before.finish()
        _ = try session.finish()
        #expect(output.waiting == 0, "a link that closed leaves no waiter behind")
    }

    @Test func readsAreSmallBeforeTheSessionAndInBulkOnlyWithRoom() throws {
        let bulk = MemoryBudget(limit: ReadThrottle.bulkShareBytes)
        let phase = SessionPhase()
        let (channel, _) = try channel(FrameSplitter(phase: phase, bulk: bulk))
        channel.read()
        #expect(channel.options.isEmpty, "before the session: the bootstrap's small reads")
        phase.begin()
        channel.read()
        let perCycle = channel.options.compactMap { $0.value as? UInt }
        #expect(perCycle.last == 1, "in session: one small read at a time")
        var data = ByteBuffer()
        FrameEncoder.write(Frame(kind: .data, channel: 1, payload: ByteBuffer(repeating: 1, count: 100)), into: &data)
        try channel.writeInbound(data)
        #expect(bulk.used == ReadThrottle.bulkShareBytes, "a link carrying data reads in bulk")
        #expect(channel.options.compactMap { $0.value as? UInt }.last == Connections.bulkReads.perCycle)
        let (other, _) = try self.channel(FrameSplitter(bulk: bulk))
        try other.writeInbound(data)
        #expect(bulk.used == ReadThrottle.bulkShareBytes, "no room for a second one")
        _ = try channel.finish()
        #expect(bulk.used == 0)
        _ = try other.finish()
    }
}

/// What NIO reads from a connection whose peer closed while its reads were held (it reads to the
/// end whatever `autoRead` says): messages are dropped and counted, never held.
@Suite struct ReadThrottleDrainTests {
    @Test func messagesReadWhileReadsAreHeldAreCountedNotHeld() throws {
        let stuck = OutputQueueTests.Reader()
        let output = OutputQueue(limits: .init(bytes: 100, dropAt: 10_000)) { stuck.write($0, $1) }
        output.append(String(repeating: "x", count: 500) + "\n", fd: 1)
        let budget = MemoryBudget(limit: 4 << 20)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FrameSplitter(phase: SessionPhase(inSession: true), output: output, frames: budget))
        channel.read()
        #expect(output.waiting == 1, "the output is full: reads are held")
        var bytes = ByteBuffer()
        for _ in 0..<3 {
            FrameEncoder.write(Frame(kind: .message, channel: 0, payload: ByteBuffer(repeating: 9, count: 100_000)), into: &bytes)
        }
        FrameEncoder.write(Frame(kind: .ping, channel: 0, payload: ByteBuffer()), into: &bytes)
        // Cut where a read would: the middle of the second message.
        let first = bytes.getSlice(at: 0, length: 150_000) ?? ByteBuffer()
        let rest = bytes.getSlice(at: 150_000, length: bytes.readableBytes - 150_000) ?? ByteBuffer()
        try channel.writeInbound(first)
        try channel.writeInbound(rest)
        #expect(budget.used == 0, "nothing held")
        let frames = try (0..<4).compactMap { _ in try channel.readInbound(as: Frame.self) }
        #expect(frames.map(\.kind) == [.ping], "the messages are dropped, a small frame goes up")
        _ = try channel.finish()
        #expect(output.waiting == 0)
        // Only now: the room would be reported from the writer's thread.
        stuck.open()
        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while !stuck.text.contains("\"suppressed\""), ContinuousClock.now < deadline { usleep(1000) }
        #expect(stuck.text.contains("\"of\":\"message\""), "counted as dropped message lines: \(stuck.text.suffix(300))")
        #expect(stuck.text.contains("\"count\":3"))
    }
}
