import Testing
@testable import NearbyCore
@testable import NearbyBase

/// The invitation desk's own decisions, without sockets: how many tries an invitation we send gets
/// and with what (`InviteAttempts`); what it does with one we receive is `InvitationPolicyTests`.
@Suite struct InvitationDeskTests {
    private static let known = Dialer.Target(host: "192.0.2.7", port: 7000, expected: nil, name: "desk")

    private static func tried(_ next: InviteAttempts.Next) -> (remembering: Bool, known: String?)? {
        guard case let .attempt(remembering, known) = next else { return nil }
        return (remembering, known?.address)
    }

    @Test func whereThePeerWasLastReachedIsTriedFirstAndOnlyOnce() throws {
        var attempts = InviteAttempts(query: "desk", timeout: 5, known: Self.known)
        let first = try #require(Self.tried(attempts.next()))
        #expect(first.remembering && first.known == "192.0.2.7:7000")
        attempts.retry(.passedOver(.connectionFailed("someone else at 192.0.2.7")))
        let second = try #require(Self.tried(attempts.next()))
        #expect(second.remembering && second.known == nil)
    }

    @Test func aRememberedAddressThatLedNowhereIsNotTriedAgain() throws {
        var attempts = InviteAttempts(query: "desk", timeout: 5)
        #expect(try #require(Self.tried(attempts.next())).remembering)
        attempts.retry(.withoutRemembered)
        #expect(try #require(Self.tried(attempts.next())).remembering == false)
        // Passing over a record does not bring remembered addresses back.
        attempts.retry(.passedOver(.connectionFailed("impostor")))
        #expect(try #require(Self.tried(attempts.next())).remembering == false)
    }

    @Test func fourTriesAtMostThenTheInvitationTimesOut() {
        var attempts = InviteAttempts(query: "desk", timeout: 5)
        for _ in 0..<InviteAttempts.limit {
            #expect(Self.tried(attempts.next()) != nil)
            attempts.retry(.withoutRemembered)
        }
        guard case let .fail(error) = attempts.next() else {
            Issue.record("a fifth try")
            return
        }
        #expect(error == .invitationTimedOut(peer: "desk", seconds: 5))
    }

    /// A record passed over is the answer when no other record claims the peer: the user hears why
    /// that host was not it, not "not found".
    @Test func aPassedOverRecordIsTheAnswerWhenNothingElseIsFound() {
        var attempts = InviteAttempts(query: "desk", timeout: 5)
        let notFound = NearbyError.peerNotFound("desk", waitedSeconds: 5)
        #expect(attempts.failure(notFound) == notFound)
        _ = attempts.next()
        let impostor = NearbyError.connectionFailed("192.0.2.7 answered as another identity")
        attempts.retry(.passedOver(impostor))
        #expect(attempts.failure(notFound) == impostor)
        // Any other failure stands as it is.
        #expect(attempts.failure(.declined(peer: "desk", reason: "no")) == .declined(peer: "desk", reason: "no"))
        for _ in 1..<InviteAttempts.limit { _ = attempts.next() }
        guard case let .fail(error) = attempts.next() else {
            Issue.record("a fifth try")
            return
        }
        #expect(error == impostor)
    }
}
