import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyWire

/// The node's answer to an invitation, decided without sockets: facts in, actions out.
@Suite struct InvitationPolicyTests {
    private typealias Facts = InvitationPolicy.Facts

    @Test func aFriendIsAcceptedAtOnceAndTheEventSaysWho() {
        let actions = InvitationPolicy.decide(timeout: 30, Facts(friend: true, autoAccept: true, acceptWaiting: true))
        let by = Spelling.option(.acceptFrom)
        // `--accept-from` wins over `--auto-accept` (a friend is pinned for good) and over a waiting `accept`.
        #expect(actions == [.hold(lifetime: 30, answeredBy: by), .accept(by: by)])
        let named = InvitationPolicy.decide(timeout: 30, Facts(friend: true, acceptedBy: "nearby send"))
        #expect(named == [.hold(lifetime: 30, answeredBy: "nearby send"), .accept(by: "nearby send")])
    }

    @Test func autoAcceptLetsAStrangerInMarkedAsOne() {
        let by = Spelling.option(.autoAccept)
        #expect(InvitationPolicy.decide(timeout: 30, Facts(autoAccept: true, acceptWaiting: true))
            == [.hold(lifetime: 30, answeredBy: by), .markAutoAccepted, .accept(by: by)])
    }

    @Test func aWaitingAcceptAnswersElseTheInvitationWaitsAndExpires() {
        #expect(InvitationPolicy.decide(timeout: 30, Facts(acceptWaiting: true))
            == [.hold(lifetime: 30, answeredBy: Spelling.command(.accept)), .answerWaiter])
        #expect(InvitationPolicy.decide(timeout: 30, Facts()) == [.hold(lifetime: 30, answeredBy: nil), .showListeners, .expire(after: 30)])
        // The inviter's timeout is bounded both ways: 1 s to 5 minutes.
        #expect(InvitationPolicy.decide(timeout: 0, Facts()).last == .expire(after: 1))
        #expect(InvitationPolicy.decide(timeout: 1e9, Facts()).last == .expire(after: 300))
    }

    @Test func aLiveSessionOrAnIDInUseIsDeclinedBeforeAnyPolicy() {
        let live = InvitationPolicy.decide(timeout: 30, Facts(liveSessionElsewhere: true, ourInvitationWaiting: true, friend: true))
        #expect(live == [.decline(reason: SessionStateMachine.alreadyInSession, closing: "duplicate connection: already in session")])
        let taken = InvitationPolicy.decide(timeout: 30, Facts(idInUse: true, friend: true))
        #expect(taken == [.decline(reason: "invitation ID in use", closing: "invitation ID already pending")])
    }

    /// Two nodes invite each other at once: each one's policy sees the other's invitation cross its
    /// own. Wired by hand through the session machines, they end in one session — the smaller ID's.
    @Test func crossedInvitationsEndInOneSession() throws {
        let a = try #require(PeerID("0000000000001")), b = try #require(PeerID("0000000000002"))
        for (me, other) in [(a, b), (b, a)] {
            let mine = Facts(ourInvitationWaiting: true, oursWins: SessionMath.keepsOwnInvitation(own: me, other: other))
            let theirs = Facts(ourInvitationWaiting: true, oursWins: SessionMath.keepsOwnInvitation(own: other, other: me))
            let here = InvitationPolicy.decide(timeout: 30, mine), there = InvitationPolicy.decide(timeout: 30, theirs)
            // Exactly one side declines "crossed"; the other accepts at once.
            let declines = [here, there].filter { $0 == [.decline(reason: "crossed", closing: "crossed invitations: ours wins")] }
            let accepts = [here, there].filter { $0 == [.hold(lifetime: 0, answeredBy: "crossed invitations"), .accept(by: "crossed invitations")] }
            #expect(declines.count == 1 && accepts.count == 1)
        }
        // The loser's invitation, declined "crossed" by the winner, tells the loser's machine to wait
        // for the session on the winner's connection instead of failing.
        var loser = SessionStateMachine(inbound: false), winner = SessionStateMachine(inbound: true)
        let invite = loser.invite(id: "x", context: nil, timeout: 30).compactMap { if case let .send(frame) = $0 { frame } else { nil } }
        _ = try winner.received(invite[0])
        guard case let .decline(reason, closing)? = InvitationPolicy.decide(timeout: 30, Facts(ourInvitationWaiting: true, oursWins: true)).first else {
            Issue.record("the winner did not decline")
            return
        }
        let answer = winner.answer(accept: false, reason: reason, closing: closing).compactMap { if case let .send(frame) = $0 { frame } else { nil } }
        #expect(try loser.received(answer[0]).contains(.crossed))
    }
}
