import Foundation
import Synchronization
import NearbyBase

/// A transfer that rides out an outage: when the link carrying a file goes (nothing heard, the
/// receiver restarted), the sending command keeps the file, gets the peer back — where it was last
/// reached first, then wherever discovery shows it — as often as `RetryPolicy` says, and sends the
/// file again on the new session: the receiver offers the prefix it kept, which we check, so only
/// the rest goes. After `RetryPolicy.bound` of outage the file fails as it did before (exit 5,
/// resumable by running the command again). Session liveness is untouched: the old session is
/// reported `disconnected` as always; this is the transfer's own persistence.
///
/// What is not retried: messages (`send`: a message either went in the session or the command
/// says it did not — sending it again could deliver it twice) and streams (their bytes cannot be
/// replayed without buffering them all). Both fail at once, as before.
extension Node {
    /// Runs `body` on the session with `peer` until it succeeds, getting the session back after a
    /// failure of the link; `peer` becomes the peer of the session that finished it.
    func resuming(
        _ path: String, peer: inout AuthenticatedPeer, policy: RetryPolicy, sink: any EventSink, client: (any EventSink)?,
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
                // A peer that broke the protocol is not given another go.
                // Nor one that left on purpose (its goodbye: Ctrl-C, `disconnect`, its node stopping):
                // only a link that failed, or a peer that vanished, is waited for.
                // The link's own end says why: the file's channel may fail a moment before the link
                // reads the goodbye that follows, so let the link finish first (2 s at most).
                if RetryPolicy.retryable(error), let used { _ = await used.detached(by: .now + .seconds(2)) }
                var over = false
                switch used?.closeReason {
                case .violation?, .peerLeft?: over = true
                default: break
                }
                guard policy.bound > .zero, RetryPolicy.retryable(error), !over, !Task.isCancelled else {
                    held.release()
                    throw error
                }
                peer = try await reconnect(peer, path: path, after: error, known: known, policy: policy, held: held, client: client)
                known = Self.knownTarget(peer) ?? known
            }
        }
    }

    /// Attempts to reach `peer` again, `policy`'s waits apart, until one does or the outage has
    /// lasted the bound. Each says `reconnecting`; the file's next `file-started` is followed by
    /// `resumed`.
    private func reconnect(
        _ peer: AuthenticatedPeer, path: String, after failure: NearbyError, known: Dialer.Target?, policy: RetryPolicy,
        held: HeldFailures, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer {
        let started = ContinuousClock.now
        let quiet = DroppingSink(client, dropping: [Events.Looking.event])
        var last = failure
        var attempt = 0
        while true {
            attempt += 1
            let elapsed = ContinuousClock.now - started
            guard case let .retry(_, wait) = policy.decide(attempt: attempt, elapsed: elapsed) else {
                held.release()
                throw Self.outlasted(failure, path: path, policy: policy)
            }
            held.inner.emit(Events.Reconnecting(
                peer: peer.ref, path: path, attempt: attempt, after: Self.seconds(wait), seconds: Self.seconds(elapsed),
                retryFor: Self.seconds(policy.bound), reason: last.errorDescription ?? "\(last)"))
            do {
                try await Task.sleep(for: wait)
            } catch {
                held.release()
                throw .cancelled("sending \(path)")
            }
            let timeout = policy.attemptTimeout(elapsed: ContinuousClock.now - started)
            do throws(NearbyError) {
                let back = try await invite(
                    peer.id.rawValue, context: nil, timeout: Self.seconds(timeout), deadline: .now + timeout, client: quiet, known: known)
                held.resuming(attempts: attempt, seconds: Self.seconds(ContinuousClock.now - started))
                return back
            } catch {
                guard RetryPolicy.retryable(error), !Task.isCancelled else {
                    held.release()
                    throw error
                }
                last = error
            }
        }
    }

    /// The transfer's failure once the outage outlasted the bound: still a lost connection (exit 5),
    /// saying how long we tried.
    static func outlasted(_ failure: NearbyError, path: String, policy: RetryPolicy) -> NearbyError {
        let reason = failure.errorDescription ?? "\(failure)"
        let bound = Self.seconds(policy.bound)
        let tried = "not reached again within \(bound == bound.rounded() ? String(Int(bound)) : String(bound)) s (\(Spelling.option(.retryFor)))"
        return .transferFailed(path: path, code: TransferCode.connectionLost.description, reason: "\(reason); \(tried)")
    }

    /// Where the session with `peer` was reached, with its identity: tried first when it goes.
    static func knownTarget(_ peer: AuthenticatedPeer) -> Dialer.Target? {
        guard let (host, port) = Dialer.parseHostPort(peer.address), Dialer.isIPAddress(host) else { return nil }
        return Dialer.Target(host: host, port: port, expected: peer.id, name: peer.name)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration / .milliseconds(1)).rounded() / 1000
    }
}

/// The sink a resuming transfer's attempts write to: a `file-failed` that another attempt may
/// still make good is held back (the last one comes out if none does), and the `file-started` of
/// a file that resumes after an outage is followed by `resumed`.
final class HeldFailures: EventSink {
    let inner: any EventSink
    private struct State {
        var failure: Events.FileFailed?
        var resume: (attempts: Int, seconds: Double)?
    }
    private let state = Mutex(State())

    init(_ inner: any EventSink) { self.inner = inner }

    func emit(_ body: some EventBody) {
        if let failed = body as? Events.FileFailed, failed.direction == "send", failed.resumable {
            state.withLock { $0.failure = failed }
            return
        }
        inner.emit(body)
        if let started = body as? Events.FileStarted, started.direction == "send",
           let resume = state.withLock({ state -> (attempts: Int, seconds: Double)? in
               defer { state.resume = nil }
               return state.resume
           }) {
            inner.emit(Events.Resumed(
                transfer: started.transfer, peer: started.peer, path: started.path, offset: started.skipped, bytes: started.bytes,
                attempts: resume.attempts, seconds: resume.seconds))
        }
    }

    func emitLine(_ line: String) { inner.emitLine(line) }

    /// The peer is back: the next `file-started` says where the file resumes.
    func resuming(attempts: Int, seconds: Double) {
        state.withLock {
            $0.failure = nil
            $0.resume = (attempts, seconds)
        }
    }

    /// No attempt is left: the failure held back comes out.
    func release() {
        if let failure = state.withLock({ state -> Events.FileFailed? in
            defer { state.failure = nil }
            return state.failure
        }) {
            inner.emit(failure)
        }
    }
}

/// Passes on everything but the kinds named (a reconnect's "still looking" is not news: `reconnecting` said it).
struct DroppingSink: EventSink {
    let inner: (any EventSink)?
    let dropping: Set<String>
    init(_ inner: (any EventSink)?, dropping: Set<String>) {
        self.inner = inner
        self.dropping = dropping
    }
    func emit(_ body: some EventBody) {
        guard !dropping.contains(type(of: body).event) else { return }
        inner?.emit(body)
    }
    func emitLine(_ line: String) { inner?.emitLine(line) }
}

/// The files of one `send-file` delivered so far (by source), across the links of its retries.
final class DeliveredFiles: Sendable {
    private let sources = Mutex(Set<String>())
    func contains(_ file: OutgoingFile) -> Bool { sources.withLock { $0.contains(file.source) } }
    func add(_ file: OutgoingFile) { _ = sources.withLock { $0.insert(file.source) } }
}
