import Foundation
import NIOCore
import NearbyBase
import NearbyWire

/// Invitations we send: find the peer (`Dialer`), connect, let the link's handshake and invite
/// frame run (`Link.run`, `attached`), then wait for the answer, the deadline or our cancellation.
/// How many tries and with what is `InviteAttempts`'s to say.
extension InvitationDesk {
    /// Invites `query` and waits for the answer. `known`: where the peer was last reached (a transfer
    /// getting its link back, `Resumer`), tried first as a remembered address is.
    nonisolated(nonsending) func invite(
        _ query: String, context: String?, offer: Offer? = nil, timeout: Double, deadline: ContinuousClock.Instant, client: (any EventSink)?,
        known: Dialer.Target? = nil
    ) async throws(NearbyError) -> AuthenticatedPeer {
        var attempts = InviteAttempts(query: query, timeout: timeout, known: known)
        while true {
            switch attempts.next() {
            case let .fail(error): throw error
            case let .attempt(remembering, known):
                let attempt = Attempt(
                    query: query, context: context, offer: offer, timeout: timeout, deadline: deadline, client: client, remembering: remembering, known: known)
                do throws(NearbyError) {
                    switch try await invite(attempt) {
                    case let .reached(peer): return peer
                    case let .retry(retry): attempts.retry(retry)
                    }
                } catch {
                    throw attempts.failure(error)
                }
            }
        }
    }

    /// One try of `invite`.
    private struct Attempt {
        let query: String
        let context: String?
        let offer: Offer?
        let timeout: Double
        let deadline: ContinuousClock.Instant
        let client: (any EventSink)?
        /// Whether a remembered address may be tried before discovery answers (not again once it failed).
        let remembering: Bool
        /// Where the peer was last reached, tried as a remembered address.
        var known: Dialer.Target? = nil
    }

    private enum Tried {
        case reached(AuthenticatedPeer)
        case retry(Dialer.Retry)
    }

    private nonisolated(nonsending) func invite(_ attempt: Attempt) async throws(NearbyError) -> Tried {
        let (query, deadline, client) = (attempt.query, attempt.deadline, attempt.client)
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        if let peer = await alreadyReached(query, client: client) { return .reached(peer) }
        let (target, remembered) = try await dialer.find(
            query, known: attempt.known, remembering: attempt.remembering, until: deadline, timeout: attempt.timeout, client: client ?? events)
        if let peer = await inSession(with: target, until: deadline, client: client) { return .reached(peer) }
        let invitation = Invitations.Outgoing(id: Invitations.Outgoing.newID(), context: attempt.context, offer: attempt.offer, timeout: attempt.timeout)
        if let expected = target.expected { table.outgoing[expected] = invitation }
        let negotiated: Negotiated, at: Dialer.Target
        do throws(NearbyError) {
            switch try await dialer.reach(
                target, remembered: remembered, query: query, deadline: deadline, timeout: attempt.timeout, client: client ?? events, sink: sink) {
            case let .connected(won, there): (negotiated, at) = (won, there)
            case let .retry(retry):
                table.forget(invitation)
                return .retry(retry)
            }
        } catch {
            table.forget(invitation)
            throw error
        }
        tasks.serve(NodeTasks.Dialled(negotiated: negotiated, expected: target.expected, invitation: invitation, sink: sink))
        // The invite frame goes out once the handshake is done (`attached`); then the answer decides,
        // or the deadline, or our own cancellation.
        let outcome = await invitation.outcome.wait(until: deadline)
        table.forget(invitation)
        switch outcome {
        case let .connected(peer)?:
            sessions.reached(peer.id, telling: client)
            await dialer.rememberReached(peer, at: at, tried: target.hosts)
            return .reached(peer)
        case let .declined(reason)?:
            let who = invitation.link?.peer
            sink.emit(Events.Declined(invitation: invitation.id, peer: PeerRef(id: who?.id.rawValue ?? query, name: who?.name), reason: reason))
            // The ID is in the event; the sentence says the peer as the user named it.
            throw .declined(peer: query, reason: reason)
        case let .failed(error)?:
            if let retry = await dialer.retry(after: error, at: target, remembered: remembered) { return .retry(retry) }
            throw error
        case nil:
            // Out of time, or cancelled: withdraw. Settle first, so closing the link does not report
            // a lost connection instead.
            let cancelled = Task.isCancelled
            let error: NearbyError = cancelled
                ? .cancelled("inviting \(query)")
                : .invitationTimedOut(peer: query, seconds: attempt.timeout)
            invitation.outcome.settle(.failed(error))
            if let link = invitation.link {
                let why = cancelled ? "invitation withdrawn" : "invitation timed out"
                await sessions.leave(link, because: .ended(why), telling: why)
            }
            throw error
        }
    }

    /// The peer at `target` when no connection is needed: a session at that address (HOST:PORT), its
    /// invitation that arrived while we looked for it, or a live session; a session that is closing
    /// is let go first (until `deadline`, 2 s at most), so the peer does not take our invitation
    /// for a duplicate.
    private nonisolated(nonsending) func inSession(
        with target: Dialer.Target, until deadline: ContinuousClock.Instant, client: (any EventSink)?
    ) async -> AuthenticatedPeer? {
        if target.expected == nil, let link = sessions.at(address: target.address) { return sessions.tell(client, about: link) }
        guard let expected = target.expected else { return nil }
        if let peer = await acceptPending(from: expected, client: client) { return peer }
        guard let link = sessions[expected] else { return nil }
        if !link.isClosing { return sessions.tell(client, about: link) }
        await Link.untilDetached([link], by: min(deadline, .now + .seconds(2)))
        return nil
    }

    /// The peer `query` names when no invitation is needed: in a live session with us (not one that
    /// is closing: `disconnect` returned before it was gone), or inviting us already (inviting it
    /// back means yes).
    private nonisolated(nonsending) func alreadyReached(_ query: String, client: (any EventSink)?) async -> AuthenticatedPeer? {
        let current = sessions.live(matching: query)
        if current.count == 1, let link = current.first { return sessions.tell(client, about: link) }
        if let theirs = await pending(matching: query).first {
            return await acceptPending(from: theirs.link.peer.id, client: client)
        }
        return nil
    }
}
