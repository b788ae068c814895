import Foundation
import NearbyBase
import NearbyWire

/// When a transfer's link goes silent, how the sending command tries to get it back: a pure policy,
/// tested without sockets (`Resumer` carries it out). An outage begins at the first
/// failure after the peer was last reached; attempts follow each other quickly at first, then at
/// most `cap` apart, so that a link that returns is used again within about `cap` plus one
/// connection; once the outage has lasted `bound`, the transfer fails as it always did
/// (exit 5, resumable by running the command again).
package struct RetryPolicy: Sendable, Equatable {
    /// How long the peer may stay out of reach: `--retry-for` (default two minutes); 0 never retries.
    package var bound: Duration
    /// The wait before the second attempt (the first goes at once), doubled each time up to `cap`.
    package var first: Duration
    package var cap: Duration
    /// How long one attempt may take (the lookup, the connection and the peer's answer).
    package var attempt: Duration

    package static let defaultBound: Double = 120

    package init(bound: Duration, first: Duration = .milliseconds(250), cap: Duration = .seconds(1), attempt: Duration = .seconds(3)) {
        self.bound = max(bound, .zero)
        self.first = max(first, .milliseconds(1))
        self.cap = max(cap, self.first)
        self.attempt = max(attempt, .milliseconds(100))
    }

    /// `--retry-for SECONDS` (nil: the default), and $NEARBY_RETRY_FIRST_MS, $NEARBY_RETRY_CAP_MS and
    /// $NEARBY_RETRY_ATTEMPT_MS (test knobs).
    package static func forSeconds(_ seconds: Double?, environment: [String: String] = ProcessInfo.processInfo.environment) -> RetryPolicy {
        func knob(_ name: String) -> Duration? { environment[name].flatMap(Int.init).map { .milliseconds(max($0, 1)) } }
        let bound = seconds.map { $0.isFinite ? max($0, 0) : defaultBound } ?? defaultBound
        var policy = RetryPolicy(bound: .milliseconds(Int64(min(bound, 86_400) * 1000)))
        if let first = knob("NEARBY_RETRY_FIRST_MS") { policy.first = first }
        if let cap = knob("NEARBY_RETRY_CAP_MS") { policy.cap = max(cap, policy.first) }
        if let attempt = knob("NEARBY_RETRY_ATTEMPT_MS") { policy.attempt = attempt }
        return policy
    }

    package enum Decision: Sendable, Equatable {
        /// Try again after `after`: attempt `attempt` (from 1) of this outage.
        case retry(attempt: Int, after: Duration)
        /// The outage lasted `bound`: the transfer fails.
        case giveUp
    }

    /// The wait before attempt `attempt` (from 1): none for the first, then `first`, doubling, at most `cap`.
    package func delay(before attempt: Int) -> Duration {
        guard attempt > 1 else { return .zero }
        var wait = first
        for _ in 2..<min(attempt, 40) where wait < cap { wait = wait * 2 }
        return min(wait, cap)
    }

    /// What to do after `elapsed` of an outage, `attempt` being the one that would come next. An
    /// attempt never starts so late that it would end past the bound.
    package func decide(attempt: Int, elapsed: Duration) -> Decision {
        let wait = delay(before: attempt)
        guard bound > .zero, elapsed + wait < bound else { return .giveUp }
        return .retry(attempt: attempt, after: wait)
    }

    /// How long the next attempt may take: `attempt`, and never past the bound.
    package func attemptTimeout(elapsed: Duration) -> Duration {
        max(min(attempt, bound - elapsed), .milliseconds(100))
    }

    /// Whether a failure is the link's (worth another attempt) rather than the peer's answer or ours:
    /// a lost or failed connection, a peer not seen or not answering (yet), a session the peer still
    /// thinks alive. A refusal, a changed identity, a damaged file, a full disk or Ctrl-C are final.
    package static func retryable(_ error: NearbyError) -> Bool {
        switch error {
        case let .transferFailed(_, code, _): code == .connectionLost || code == .connectionFailed
        case .connectionFailed, .peerNotFound, .invitationTimedOut, .notConnected: true
        case let .declined(_, reason): reason == SessionStateMachine.alreadyInSession
        default: false
        }
    }
}
