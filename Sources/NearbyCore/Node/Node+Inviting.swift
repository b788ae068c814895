import Foundation
import NIOCore
import NearbyBase

/// Invitations we send: find the peer (`Dialer`), connect, let the link's handshake and invite
/// frame run (`Link.run`, `attach`), then wait for the answer, the deadline or our cancellation.
extension Node {
    /// Invites a peer and waits for the answer. Already connected: returns at once. A remembered
    /// address is tried first while discovery runs; when it leads nowhere (it failed, or another
    /// identity answered there) the invitation is tried once more with discovery alone.
    package func invite(_ query: String, context: String?, timeout: Double, client: (any EventSink)?) async throws(NearbyError) -> AuthenticatedPeer {
        if let context, context.utf8.count > FrameBody.maxContextBytes {
            throw .invalidArgument("the invitation context is \(context.utf8.count) bytes; the maximum is \(FrameBody.maxContextBytes)")
        }
        try await refuseSelf(query)
        return try await invite(query, context: context, timeout: timeout, deadline: ContinuousClock.now + .seconds(timeout), client: client)
    }

    /// `known`: where the peer was last reached (a transfer getting its link back, `ResumingTransfer`),
    /// tried first as a remembered address is. A record that claims the peer's ID but whose host
    /// is not it is passed over for the next (`ClaimedIdentity.swift`), a few times at most.
    func invite(
        _ query: String, context: String?, timeout: Double, deadline: ContinuousClock.Instant, client: (any EventSink)?,
        known: Dialer.Target? = nil
    ) async throws(NearbyError) -> AuthenticatedPeer {
        var remembering = true
        var known = known
        // Why the last record passed over failed: the answer when no other record claims the peer.
        var passedOver: NearbyError?
        for _ in 0..<4 {
            let attempt = Attempt(
                query: query, context: context, timeout: timeout, deadline: deadline, client: client, remembering: remembering, known: known)
            do throws(NearbyError) {
                switch try await invite(attempt) {
                case let .reached(peer): return peer
                case .retry(.withoutRemembered): remembering = false
                case let .retry(.passedOver(failure)): passedOver = failure
                }
            } catch {
                if case .peerNotFound = error, let passedOver { throw passedOver }
                throw error
            }
            known = nil
        }
        throw passedOver ?? .invitationTimedOut(peer: query, seconds: timeout)
    }

    /// One try of `invite`.
    private struct Attempt {
        let query: String
        let context: String?
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

    private func invite(_ attempt: Attempt) async throws(NearbyError) -> Tried {
        let (query, deadline, client) = (attempt.query, attempt.deadline, attempt.client)
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        if let peer = await alreadyReached(query, client: client) { return .reached(peer) }
        let (target, remembered) = try await dialer.find(
            query, known: attempt.known, remembering: attempt.remembering, until: deadline, timeout: attempt.timeout, client: client ?? events)
        if let peer = await inSession(with: target, until: deadline, client: client) { return .reached(peer) }
        let invitation = Invitations.Outgoing(id: Invitations.Outgoing.newID(), context: attempt.context, timeout: attempt.timeout)
        if let expected = target.expected { invitations.outgoing[expected] = invitation }
        let negotiated: Negotiated, at: Dialer.Target
        do throws(NearbyError) {
            switch try await dialer.reach(
                target, remembered: remembered, query: query, deadline: deadline, timeout: attempt.timeout, client: client ?? events, sink: sink) {
            case let .connected(won, there): (negotiated, at) = (won, there)
            case let .retry(retry):
                invitations.forget(invitation)
                return .retry(retry)
            }
        } catch {
            invitations.forget(invitation)
            throw error
        }
        spawn { [self] in await serve(negotiated, isClient: true, expected: target.expected, invitation: invitation, sink: sink) }
        // The invite frame goes out once the handshake is done (`attach`); then the answer decides,
        // or the deadline, or our own cancellation.
        let outcome = await invitation.outcome.wait(until: deadline)
        invitations.forget(invitation)
        switch outcome {
        case let .connected(peer)?:
            if let client, let link = sessions[peer.id] { client.emit(Events.Connected(link.peer, peers: sessions.count)) }
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
                await leave(link, because: .ended(why), telling: why)
            }
            throw error
        }
    }

    /// The peer at `target` when no connection is needed: a session at that address (HOST:PORT), its
    /// invitation that arrived while we looked for it, or a live session; a session that is closing
    /// is let go first (until `deadline`, 2 s at most), so the peer does not take our invitation
    /// for a duplicate.
    private func inSession(with target: Dialer.Target, until deadline: ContinuousClock.Instant, client: (any EventSink)?) async -> AuthenticatedPeer? {
        if target.expected == nil, let link = sessions.values.first(where: { $0.peer.address == target.address }) {
            client?.emit(Events.Connected(link.peer, peers: sessions.count))
            return link.peer
        }
        guard let expected = target.expected else { return nil }
        if let peer = await acceptPendingInvitation(from: expected, client: client) { return peer }
        guard let link = sessions[expected] else { return nil }
        if !link.isClosing {
            client?.emit(Events.Connected(link.peer, peers: sessions.count))
            return link.peer
        }
        await Link.untilDetached([link], by: min(deadline, .now + .seconds(2)))
        return nil
    }

    /// The peer `query` names when no invitation is needed: in a live session with us (not one that
    /// is closing: `disconnect` returned before it was gone), or inviting us already (inviting it
    /// back means yes).
    private func alreadyReached(_ query: String, client: (any EventSink)?) async -> AuthenticatedPeer? {
        let current = sessions.values.filter { Self.matches(query, $0.peer) && !$0.isClosing }
        if current.count == 1, let link = current.first {
            client?.emit(Events.Connected(link.peer, peers: sessions.count))
            return link.peer
        }
        if let theirs = await pendingInvitations(matching: query).first {
            return await acceptPendingInvitation(from: theirs.link.peer.id, client: client)
        }
        return nil
    }

    /// `HOST:PORT` (`[v6]:PORT` too) as host and port, or nil.
    package static func parseHostPort(_ text: String) -> (host: String, port: Int)? { Dialer.parseHostPort(text) }
}
