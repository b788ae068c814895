import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire

/// The channel multiplexer, without sockets: window accounting, frames for unknown and closed
/// channels, caps, and close/reset races.
@Suite struct ChannelMuxTests {
    private func open(_ id: UInt32) -> Frame {
        FrameBody.frame(.open, FrameBody.Open(kind: .stream, path: "", size: 0, key: ""), channel: id)
    }

    private func data(_ id: UInt32, _ count: Int) -> Frame {
        Frame(kind: .data, channel: id, payload: ByteBuffer(repeating: 7, count: count))
    }

    private func window(_ id: UInt32, _ count: UInt32) -> Frame {
        var payload = ByteBuffer()
        payload.writeInteger(count)
        return Frame(kind: .window, channel: id, payload: payload)
    }

    @Test func theSidesNumberTheirChannelsApart() {
        var client = ChannelMux(isClient: true)
        var server = ChannelMux(isClient: false)
        #expect(client.open() == 1)
        #expect(client.open() == 3)
        #expect(server.open() == 2)
        #expect(client.isOurs(3) && !client.isOurs(2))
        #expect(server.isOurs(2) && !server.isOurs(1))
    }

    @Test func dataBeforeAcceptIsAViolation() throws {
        var mux = ChannelMux(isClient: false)
        let offer = open(1)
        #expect(try mux.receive(offer) == .deliver)
        #expect(throws: ProtocolViolation.self) { try mux.receive(data(1, 10)) }
    }

    @Test func thePeerMaySendExactlyTheWindowAndNotOneByteMore() throws {
        var mux = ChannelMux(isClient: false, limits: .init(channels: 4, window: 1000))
        _ = try mux.receive(open(1))
        mux.accept(1)
        _ = try mux.receive(data(1, 600))
        _ = try mux.receive(data(1, 400))
        #expect(throws: ProtocolViolation.self) { try mux.receive(data(1, 1)) }
    }

    @Test func consumingGrantsWindowInQuarters() throws {
        var mux = ChannelMux(isClient: false, limits: .init(channels: 4, window: 1000))
        _ = try mux.receive(open(1))
        mux.accept(1)
        _ = try mux.receive(data(1, 1000))
        #expect(mux.consumed(1, 100) == nil)
        let consumed = mux.consumed(1, 200)
        let grant = try #require(consumed)
        #expect(grant.kind == .window && grant.payload.getInteger(at: 0, as: UInt32.self) == 300)
        // 300 more may come now, and no more.
        _ = try mux.receive(data(1, 300))
        #expect(throws: ProtocolViolation.self) { try mux.receive(data(1, 1)) }
    }

    @Test func framesForChannelsThatNeverExistedAreViolations() {
        var mux = ChannelMux(isClient: true)
        #expect(throws: ProtocolViolation.self) { try mux.receive(data(2, 1)) }
        #expect(throws: ProtocolViolation.self) { try mux.receive(window(5, 1)) }
        #expect(throws: ProtocolViolation.self) { try mux.receive(Frame(kind: .data, channel: 0)) }
    }

    @Test func opensMustUseThePeersNextNumber() throws {
        var mux = ChannelMux(isClient: false)
        #expect(throws: ProtocolViolation.self) { try mux.receive(open(2)) }  // our parity
        _ = try mux.receive(open(5))
        #expect(throws: ProtocolViolation.self) { try mux.receive(open(5)) }  // reused
        #expect(throws: ProtocolViolation.self) { try mux.receive(open(3)) }  // going back
    }

    @Test func lateFramesForEndedChannelsAreIgnored() throws {
        var mux = ChannelMux(isClient: true)
        let opened = mux.open()
        let id = try #require(opened)
        _ = try mux.receive(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: id))
        mux.finish(id)
        #expect(try mux.receive(window(id, 100)) == .ignore)
        #expect(try mux.receive(data(id, 100)) == .ignore)
        #expect(try mux.receive(TestFrames.close(id)) == .ignore)
    }

    @Test func aResetRacingACloseEndsTheChannelOnce() throws {
        var mux = ChannelMux(isClient: false)
        _ = try mux.receive(open(1))
        mux.accept(1)
        #expect(try mux.receive(TestFrames.close(1)) == .deliver)
        #expect(try mux.receive(TestFrames.reset(1)) == .deliver)
        #expect(mux.count == 0)
        #expect(try mux.receive(TestFrames.reset(1)) == .ignore)
    }

    @Test func opensOverTheCapAreRefusedAndLeaveNothing() throws {
        var mux = ChannelMux(isClient: false, limits: .init(channels: 2, window: 1000))
        _ = try mux.receive(open(1))
        _ = try mux.receive(open(3))
        guard case let .refuse(answer) = try mux.receive(open(5)) else {
            Issue.record("the third open was not refused")
            return
        }
        #expect(answer.kind == .openReply && answer.channel == 5)
        let reply = try FrameBody.decode(FrameBody.OpenReply.self, from: answer)
        #expect(!reply.accept)
        #expect(mux.count == 2)
        // Frames on the refused channel are late, not violations; our own opens hit the cap too.
        #expect(try mux.receive(data(5, 10)) == .ignore)
        #expect(mux.open() == nil)
        mux.finish(1)
        #expect(mux.open() != nil)
    }

    @Test func anAnswerToAChannelWeDidNotOpenIsAViolation() throws {
        var mux = ChannelMux(isClient: false)
        _ = try mux.receive(open(1))
        let reply = FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: 1)
        #expect(throws: ProtocolViolation.self) { try mux.receive(reply) }
    }

    @Test func aPeerEndsItsDirectionOnce() throws {
        var mux = ChannelMux(isClient: false)
        _ = try mux.receive(open(1))
        mux.accept(1)
        _ = try mux.receive(TestFrames.close(1))
        #expect(throws: ProtocolViolation.self) { try mux.receive(data(1, 1)) }
        #expect(throws: ProtocolViolation.self) { try mux.receive(TestFrames.close(1)) }
    }
}

/// Credit summed, never queued: a flood of window frames is one number.
@Suite struct SendCreditTests {
    @Test func creditIsSummedTakenAndClosed() async {
        let gate = SendCredit(initial: 10)
        #expect(await gate.take(upTo: 4) == 4)
        for _ in 0..<100_000 { gate.add(1) }
        #expect(await gate.take(upTo: 1_000_000) == 100_006)
        let waiting = Task { await gate.take(upTo: 5) }
        gate.add(3)
        #expect(await waiting.value == 3)
        gate.close()
        #expect(await gate.take(upTo: 1) == nil)
    }

    @Test func aWaitEndsWhenItsTaskIsCancelled() async {
        let gate = SendCredit(initial: 0)
        let waiting = Task { await gate.take(upTo: 1) }
        waiting.cancel()
        #expect(await waiting.value == nil)
    }
}

/// The one-shot every waiter in the node is made of.
@Suite struct OneShotTests {
    @Test func theFirstSettleWinsAndAWaitEndsOnCancel() async {
        let shot = OneShot<Int>()
        #expect(shot.settle(1))
        #expect(!shot.settle(2))
        #expect(await shot.wait() == 1)
        let never = OneShot<Int>()
        let waiting = Task { await never.wait() }
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(!never.settle(3))  // abandoned by the cancelled waiter: a late answer goes nowhere
    }

    @Test func aDeadlineEndsTheWait() async {
        let shot = OneShot<Int>()
        #expect(await shot.wait(until: .now + .milliseconds(20)) == nil)
    }
}
