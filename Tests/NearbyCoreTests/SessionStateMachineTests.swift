import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire

@Suite struct SessionStateMachineTests {
    private func frames(_ actions: [SessionStateMachine.Action]) -> [Frame] {
        actions.compactMap { if case let .send(frame) = $0 { frame } else { nil } }
    }

    /// Client and server machines, wired to each other by hand.
    @Test func inviteAcceptMessageGoodbye() throws {
        var client = SessionStateMachine(), server = SessionStateMachine()
        let invite = frames(client.invite(id: "inv1", context: "hi", timeout: 30))
        #expect(client.state == .inviting("inv1"))
        let asked = try server.received(invite[0])
        #expect(asked == [.invitation(FrameBody.Invite(invitation: "inv1", context: "hi", timeout: 30))])
        #expect(server.state == .invited("inv1"))
        let answered = server.answer(accept: true)
        #expect(answered.last == .connected)
        #expect(try client.received(frames(answered)[0]) == [.connected])
        #expect(try server.received(Frame(kind: .message, payload: ByteBuffer(string: "yo"))) == [.message(Array("yo".utf8))])
        let bye = frames(client.leave(telling: "done"))
        #expect(try server.received(bye[0]) == [.close(reason: "peer left: done")])
        #expect(server.state == .closed && client.state == .closed)
    }

    @Test func declinedCrossedAndExpired() throws {
        var client = SessionStateMachine(), server = SessionStateMachine()
        _ = try server.received(frames(client.invite(id: "a", context: nil, timeout: 5))[0])
        let no = frames(server.answer(accept: false, reason: "declined"))
        #expect(try client.received(no[0]) == [.declined(invitation: "a", reason: "declined"), .close(reason: "invitation declined: declined")])

        var crossedClient = SessionStateMachine(), crossedServer = SessionStateMachine()
        _ = try crossedServer.received(frames(crossedClient.invite(id: "b", context: nil, timeout: 5))[0])
        let crossed = frames(crossedServer.answer(accept: false, reason: "crossed", closing: "crossed"))
        #expect(try crossedClient.received(crossed[0]).first == .crossed)
    }

    @Test func protocolRulesAreEnforced() throws {
        var fresh = SessionStateMachine()
        #expect(throws: ProtocolViolation.self) { try fresh.received(Frame(kind: .message)) }
        var answerless = SessionStateMachine()
        let stray = FrameBody.frame(.answer, FrameBody.Answer(invitation: "zzz", accept: true, reason: nil))
        #expect(throws: ProtocolViolation.self) { try answerless.received(stray) }
        var twice = SessionStateMachine()
        let invite = FrameBody.frame(.invite, FrameBody.Invite(invitation: "x", context: nil, timeout: 1))
        _ = try twice.received(invite)
        #expect(throws: ProtocolViolation.self) { try twice.received(invite) }
        var hostile = SessionStateMachine()
        let longContext = FrameBody.frame(.invite, FrameBody.Invite(invitation: "x", context: String(repeating: "c", count: 5000), timeout: 1))
        #expect(throws: ProtocolViolation.self) { try hostile.received(longContext) }
        var late = SessionStateMachine()
        #expect(throws: ProtocolViolation.self) { try late.received(Frame(kind: .hello)) }
        var pinged = SessionStateMachine()
        #expect(try pinged.received(Frame(kind: .ping)) == [.send(Frame(kind: .pong))])
    }

    @Test func keepaliveGivesUpAfterTheSilenceLimit() {
        #expect(SessionStateMachine.keepalive(silence: .seconds(3)) == .send(Frame(kind: .ping)))
        guard case let .close(reason) = SessionStateMachine.keepalive(silence: .seconds(7)) else {
            Issue.record("a silent peer is cut off")
            return
        }
        #expect(reason.contains("connection lost"))
    }
}

/// Which reason a link's end keeps (`Link.setReason`): the first, except that a goodbye read after
/// the connection broke under a write says the peer left — so a sender does not retry a receiver
/// that left on purpose (its Ctrl-C mid-file).
@Suite struct CloseReasonTests {
    @Test func theFirstReasonStands() {
        #expect(CloseReason.settled(nil, then: .lost) == .lost)
        #expect(CloseReason.settled(.weLeft("done"), then: .peerLeft("bye")) == .weLeft("done"))
        #expect(CloseReason.settled(.violation("x"), then: .peerLeft("bye")) == .violation("x"))
        #expect(CloseReason.settled(.peerLeft("bye"), then: .sendFailed) == .peerLeft("bye"))
        #expect(CloseReason.settled(.ended("silent"), then: .peerLeft("bye")) == .ended("silent"))
        #expect(CloseReason.settled(.sendFailed, then: .lost) == .sendFailed)
    }

    @Test func aGoodbyeReadAfterABrokenWriteSaysThePeerLeft() {
        #expect(CloseReason.settled(.sendFailed, then: .peerLeft("interrupted")) == .peerLeft("interrupted"))
        #expect(CloseReason.settled(.lost, then: .peerLeft("interrupted")) == .peerLeft("interrupted"))
    }
}
