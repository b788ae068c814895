import Foundation
import NearbyBase
import NearbyWire
import NearbyTransfer

/// A transfer that rides out an outage: when the link carrying a file goes (nothing heard, the
/// receiver restarted), the sending command keeps the file, gets the peer back — where it was last
/// reached first, then wherever discovery shows it — as often as `RetryPolicy` says, and sends the
/// file again on the new session: the receiver offers the prefix it kept, which we check, so only
/// the rest goes. After `RetryPolicy.bound` of outage the file fails as it did before (exit 5,
/// resumable by running the command again). Session liveness is untouched: the old session is
/// reported `disconnected` as always; this is the transfer's own persistence. `Resumption` decides
/// (pure); the resumer waits its waits, finds the session in the node's `Sessions` and invites
/// through its `InvitationDesk`, on the node (`nonisolated(nonsending)`: where it is called from).
///
/// What is not retried: messages (`send`: a message either went in the session or the command
/// says it did not — sending it again could deliver it twice) and streams (their bytes cannot be
/// replayed without buffering them all). Both fail at once, as before.
struct Resumer {
    let policy: RetryPolicy
    /// The sending command's client: it hears `reconnecting`, not the attempts' "still looking".
    let client: (any EventSink)?
    /// Where the session with the peer is found.
    let sessions: Sessions
    /// Where the peer is invited again.
    let invitations: InvitationDesk

    /// Runs `body` on the session with `peer` until it succeeds, getting the session back after a
    /// failure of the link; `peer` becomes the peer of the session that finished it.
    nonisolated(nonsending) func run(
        _ path: String, peer: inout AuthenticatedPeer, sink: any EventSink,
        _ body: (Link, any EventSink) async throws(NearbyError) -> Void
    ) async throws(NearbyError) {
        let held = HeldFailures(sink)
        var known = Self.knownTarget(peer)
        while true {
            var used: Link?
            do throws(NearbyError) {
                guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
                used = link
                try await body(link, held)
                return
            } catch {
                // The link's own end says why: the file's channel may fail a moment before the link
                // reads the goodbye that follows, so let the link finish first (2 s at most).
                if RetryPolicy.retryable(error), let used { _ = await used.detached(by: .now + .seconds(2)) }
                guard Resumption.resumes(after: error, closed: used?.closeReason, policy: policy, cancelled: Task.isCancelled) else {
                    held.release()
                    throw error
                }
                peer = try await reconnect(peer, path: path, after: error, known: known, held: held)
                known = Self.knownTarget(peer) ?? known
            }
        }
    }

    /// Attempts to reach `peer` again, `policy`'s waits apart, until one does or the outage has
    /// lasted the bound. Each says `reconnecting`; the file's next `file-started` is followed by
    /// `resumed`.
    private nonisolated(nonsending) func reconnect(
        _ peer: AuthenticatedPeer, path: String, after failure: NearbyError, known: Dialer.Target?, held: HeldFailures
    ) async throws(NearbyError) -> AuthenticatedPeer {
        let started = ContinuousClock.now
        let quiet = DroppingSink(client, dropping: [Events.Looking.event])
        var outage = Resumption(policy: policy, path: path, failure: failure)
        while true {
            let elapsed = ContinuousClock.now - started
            guard case let .attempt(attempt, wait) = outage.next(elapsed: elapsed) else {
                held.release()
                throw Resumption.outlasted(failure, path: path, policy: policy)
            }
            held.inner.emit(Events.Reconnecting(
                peer: peer.ref, path: path, attempt: attempt, after: Resumption.seconds(wait), seconds: Resumption.seconds(elapsed),
                retryFor: Resumption.seconds(policy.bound), reason: outage.last.errorDescription ?? "\(outage.last)"))
            do {
                try await Task.sleep(for: wait)
            } catch {
                held.release()
                throw .cancelled("sending \(path)")
            }
            let timeout = policy.attemptTimeout(elapsed: ContinuousClock.now - started)
            do throws(NearbyError) {
                let back = try await invitations.invite(
                    peer.id.rawValue, context: nil, timeout: Resumption.seconds(timeout), deadline: .now + timeout, client: quiet,
                    known: known)
                held.resuming(attempts: attempt, seconds: Resumption.seconds(ContinuousClock.now - started))
                return back
            } catch {
                if let final = outage.failed(error, cancelled: Task.isCancelled) {
                    held.release()
                    throw final
                }
            }
        }
    }

    /// Where the session with `peer` was reached, with its identity: tried first when it goes.
    static func knownTarget(_ peer: AuthenticatedPeer) -> Dialer.Target? {
        guard let (host, port) = Dialer.parseHostPort(peer.address), Dialer.isIPAddress(host) else { return nil }
        return Dialer.Target(host: host, port: port, expected: peer.id, name: peer.name)
    }
}

/// One transfer's outage, attempt by attempt, as `RetryPolicy` paces it: what the `Resumer` does
/// next, decided from the failures and the time passed that it is told. Pure: tested without
/// sockets or clocks (`ResumerTests`).
struct Resumption {
    let policy: RetryPolicy
    let path: String
    /// The failure that began the outage.
    let failure: NearbyError
    /// Why the last attempt failed (the outage's failure before any): the next `reconnecting`'s reason.
    private(set) var last: NearbyError
    private(set) var attempt = 0

    init(policy: RetryPolicy, path: String, failure: NearbyError) {
        self.policy = policy
        self.path = path
        self.failure = failure
        last = failure
    }

    /// Whether a transfer that failed with `error`, its link closed for `closed`, gets the link back:
    /// a peer that broke the protocol is not given another go, nor one that left on purpose (its
    /// goodbye: Ctrl-C, `disconnect`, its node stopping); only a link that failed, or a peer that
    /// vanished, is waited for — and never after our own cancellation or with no time to wait.
    static func resumes(after error: NearbyError, closed: CloseReason?, policy: RetryPolicy, cancelled: Bool) -> Bool {
        switch closed {
        case .violation?, .peerLeft?: return false
        default: return policy.bound > .zero && RetryPolicy.retryable(error) && !cancelled
        }
    }

    enum Step: Equatable {
        /// Wait `after`, then make attempt `attempt` (from 1).
        case attempt(Int, after: Duration)
        /// The outage outlasted the bound.
        case giveUp
    }

    /// The next attempt, `elapsed` into the outage.
    mutating func next(elapsed: Duration) -> Step {
        attempt += 1
        guard case let .retry(_, wait) = policy.decide(attempt: attempt, elapsed: elapsed) else { return .giveUp }
        return .attempt(attempt, after: wait)
    }

    /// An attempt failed with `error`: nil to go on, else what the transfer fails with (an answer
    /// that is not the link's, or our own cancellation).
    mutating func failed(_ error: NearbyError, cancelled: Bool) -> NearbyError? {
        guard RetryPolicy.retryable(error), !cancelled else { return error }
        last = error
        return nil
    }

    /// The transfer's failure once the outage outlasted the bound: still a lost connection (exit 5),
    /// saying how long we tried.
    static func outlasted(_ failure: NearbyError, path: String, policy: RetryPolicy) -> NearbyError {
        let reason = failure.errorDescription ?? "\(failure)"
        let bound = seconds(policy.bound)
        let tried = "not reached again within \(bound == bound.rounded() ? String(Int(bound)) : String(bound)) s (\(Spelling.option(.retryFor)))"
        return .transferFailed(path: path, code: .connectionLost, reason: "\(reason); \(tried)")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration / .milliseconds(1)).rounded() / 1000
    }
}
