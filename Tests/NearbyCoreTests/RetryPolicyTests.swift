import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

/// The policy a transfer follows to get its link back, without sockets or clocks.
struct RetryPolicyTests {
    @Test func attemptsStartAtOnceThenDoubleUpToTheCap() {
        let policy = RetryPolicy(bound: .seconds(120), first: .milliseconds(250), cap: .seconds(1))
        #expect((1...6).map { policy.delay(before: $0) } == [
            .zero, .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1), .seconds(1),
        ])
        #expect(policy.delay(before: 10_000) == .seconds(1))
    }

    /// A link that returns is used again within the cap plus one attempt: never a wait of TCP's
    /// own backoff (48 s lost after a 60 s outage).
    @Test func aReturningLinkIsTriedAgainWithinTheCap() {
        let policy = RetryPolicy(bound: .seconds(120))
        var elapsed = Duration.zero
        var attempt = 1
        while elapsed < .seconds(60) {
            guard case let .retry(n, wait) = policy.decide(attempt: attempt, elapsed: elapsed) else {
                Issue.record("gave up after \(elapsed)")
                return
            }
            #expect(n == attempt)
            #expect(wait <= policy.cap)
            // Each attempt fails at once (the network is unreachable) or after its timeout.
            elapsed += wait + (attempt.isMultiple(of: 2) ? .milliseconds(1) : policy.attempt)
            attempt += 1
        }
        #expect(attempt > 10)
    }

    @Test func theBoundEndsTheOutage() {
        let policy = RetryPolicy(bound: .seconds(10), first: .milliseconds(250), cap: .seconds(1))
        #expect(policy.decide(attempt: 1, elapsed: .seconds(9)) == .retry(attempt: 1, after: .zero))
        #expect(policy.decide(attempt: 5, elapsed: .milliseconds(8999)) == .retry(attempt: 5, after: .seconds(1)))
        #expect(policy.decide(attempt: 5, elapsed: .seconds(9)) == .giveUp)
        #expect(policy.decide(attempt: 1, elapsed: .seconds(10)) == .giveUp)
        #expect(policy.attemptTimeout(elapsed: .milliseconds(9500)) == .milliseconds(500))
        #expect(policy.attemptTimeout(elapsed: .zero) == policy.attempt)
    }

    @Test func aBoundOfZeroNeverRetries() {
        let policy = RetryPolicy.forSeconds(0, environment: [:])
        #expect(policy.decide(attempt: 1, elapsed: .zero) == .giveUp)
    }

    @Test func theDefaultIsTwoMinutesAndTheKnobsAreRead() {
        #expect(RetryPolicy.forSeconds(nil, environment: [:]).bound == .seconds(120))
        #expect(RetryPolicy.forSeconds(.infinity, environment: [:]).bound == .seconds(120))
        #expect(RetryPolicy.forSeconds(-3, environment: [:]).bound == .zero)
        let knobs = RetryPolicy.forSeconds(30, environment: ["NEARBY_RETRY_FIRST_MS": "50", "NEARBY_RETRY_CAP_MS": "200", "NEARBY_RETRY_ATTEMPT_MS": "700"])
        #expect(knobs.bound == .seconds(30))
        #expect(knobs.first == .milliseconds(50) && knobs.cap == .milliseconds(200) && knobs.attempt == .milliseconds(700))
        #expect(RetryPolicy.forSeconds(30, environment: ["NEARBY_RETRY_CAP_MS": "nonsense"]).cap == .seconds(1))
    }

    /// The link's failures are retried; the peer's answers and ours are final.
    @Test func onlyTheLinksFailuresAreRetried() {
        let retried: [NearbyError] = [
            .transferFailed(path: "a", code: .connectionLost, reason: "nothing heard for 6 s"),
            .transferFailed(path: "a", code: .connectionFailed, reason: "x"),
            .connectionFailed("refused"), .peerNotFound("bob", waitedSeconds: 3), .invitationTimedOut(peer: "bob", seconds: 3),
            .notConnected("bob"), .declined(peer: "bob", reason: SessionStateMachine.alreadyInSession),
        ]
        let final: [NearbyError] = [
            .transferFailed(path: "a", code: .ioError, reason: "disk full"),
            .transferFailed(path: "a", code: .integrity, reason: "x"),
            .transferFailed(path: "a", code: .refused, reason: "x"),
            .transferFailed(path: "a", code: .cancelled, reason: "x"),
            .declined(peer: "bob", reason: "no thanks"), .cancelled("sending a"),
            .identityMismatch(expected: "a", got: "b"), .keyChanged(peer: "bob", knownPeers: "k"),
        ]
        #expect(retried.allSatisfy(RetryPolicy.retryable))
        #expect(!final.contains(where: RetryPolicy.retryable))
    }

    /// An attempt's `file-failed` waits for the outcome: dropped when the peer is back (then
    /// `resumed` follows the next `file-started`), said once when no attempt is left.
    @Test func heldFailuresComeOutOnlyWhenNoAttemptIsLeft() {
        let sink = MemorySink()
        let held = HeldFailures(sink)
        let peer = PeerRef(id: "p", name: "Bob")
        held.emit(Events.FileStarted(transfer: "t", direction: "send", peer: peer, path: "a", bytes: 100, skipped: 0))
        held.emit(Events.FileFailed(transfer: "t", direction: "send", peer: peer, path: "a", code: "connection-lost", reason: "x", resumable: true))
        #expect(sink.lines.count == 1)
        held.resuming(attempts: 3, seconds: 21.5)
        held.emit(Events.FileStarted(transfer: "t2", direction: "send", peer: peer, path: "a", bytes: 100, skipped: 40))
        #expect(sink.lines.count == 3)
        #expect(sink.lines[2].contains(#""event":"resumed""#) && sink.lines[2].contains(#""offset":40"#) && sink.lines[2].contains(#""attempts":3"#))
        held.release()
        #expect(sink.lines.count == 3)
        held.emit(Events.FileFailed(transfer: "t2", direction: "send", peer: peer, path: "a", code: "connection-lost", reason: "y", resumable: true))
        held.emit(Events.FileFailed(transfer: "t2", direction: "send", peer: peer, path: "a", code: "io-error", reason: "z", resumable: false))
        #expect(sink.lines.count == 4)
        held.release()
        #expect(sink.lines.count == 5 && sink.lines[4].contains(#""reason":"y""#))
    }
}
