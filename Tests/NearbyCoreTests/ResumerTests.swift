import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

/// A transfer's outage decided without sockets or clocks (`Resumption`): whether the link is got
/// back at all, each attempt's wait, when to give up and with what. `RetryPolicyTests` paces it.
@Suite struct ResumerTests {
    private static let policy = RetryPolicy(bound: .seconds(10), first: .milliseconds(250), cap: .seconds(1))
    private static let lost = NearbyError.connectionFailed("connection lost")

    @Test func onlyALinkThatFailedIsGotBack() {
        let policy = Self.policy
        #expect(Resumption.resumes(after: Self.lost, closed: .lost, policy: policy, cancelled: false))
        #expect(Resumption.resumes(after: Self.lost, closed: nil, policy: policy, cancelled: false))
        // A peer that left on purpose, or broke the protocol, is not given another go.
        #expect(!Resumption.resumes(after: Self.lost, closed: .peerLeft("peer left: Ctrl-C"), policy: policy, cancelled: false))
        #expect(!Resumption.resumes(after: Self.lost, closed: .violation("bad frame"), policy: policy, cancelled: false))
        // Nor after our own Ctrl-C, a final answer, or with --retry-for 0.
        #expect(!Resumption.resumes(after: Self.lost, closed: .lost, policy: policy, cancelled: true))
        #expect(!Resumption.resumes(after: .declined(peer: "p", reason: "no"), closed: .lost, policy: policy, cancelled: false))
        #expect(!Resumption.resumes(after: Self.lost, closed: .lost, policy: RetryPolicy(bound: .zero), cancelled: false))
    }

    @Test func attemptsAreCountedAndPacedUntilTheBound() {
        var outage = Resumption(policy: Self.policy, path: "a.bin", failure: Self.lost)
        #expect(outage.next(elapsed: .zero) == .attempt(1, after: .zero))
        #expect(outage.next(elapsed: .seconds(1)) == .attempt(2, after: .milliseconds(250)))
        #expect(outage.next(elapsed: .seconds(2)) == .attempt(3, after: .milliseconds(500)))
        #expect(outage.next(elapsed: .milliseconds(9_500)) == .giveUp)
    }

    @Test func eachReconnectingSaysWhyTheLastAttemptFailed() {
        var outage = Resumption(policy: Self.policy, path: "a.bin", failure: Self.lost)
        #expect(outage.last == Self.lost)
        let unseen = NearbyError.peerNotFound("p", waitedSeconds: 3)
        #expect(outage.failed(unseen, cancelled: false) == nil)
        #expect(outage.last == unseen)
        // A final answer, or our own cancellation, ends the outage with it.
        #expect(outage.failed(.declined(peer: "p", reason: "no"), cancelled: false) == .declined(peer: "p", reason: "no"))
        #expect(outage.failed(unseen, cancelled: true) == unseen)
    }

    @Test func anOutageThatOutlastedTheBoundIsStillALostConnection() {
        let failure = Resumption.outlasted(Self.lost, path: "a.bin", policy: Self.policy)
        guard case let .transferFailed(path, code, reason) = failure else {
            Issue.record("\(failure)")
            return
        }
        #expect(path == "a.bin" && code == .connectionLost && failure.code == "connection-lost")
        #expect(reason.hasSuffix("not reached again within 10 s (\(Spelling.option(.retryFor)))"))
        #expect(failure.exitStatus.rawValue == 5)
    }
}
