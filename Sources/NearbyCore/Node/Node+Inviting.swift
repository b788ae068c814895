import Foundation
import NIOCore

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
                case .againWithoutRemembered: remembering = false
                case let .passedOver(failure): passedOver = failure
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
        /// The remembered address led nowhere: forgotten; try again with discovery alone.
        case againWithoutRemembered
        /// The record tried claims the peer's ID, but its host is not it (or did not answer): try the
        /// next that does.
        case passedOver(NearbyError)
    }

    private func invite(_ attempt: Attempt) async throws(NearbyError) -> Tried {
        let (query, deadline, client) = (attempt.query, attempt.deadline, attempt.client)
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        if let peer = await alreadyReached(query, client: client) { return .reached(peer) }
        let remembered: Dialer.Target? = if let known = attempt.known { known } else if attempt.remembering { await dialer.rememberedTarget(query) } else { nil }
        var target: Dialer.Target
        if let remembered {
            target = remembered
        } else {
            target = try await dialer.resolve(query, until: deadline, timeout: attempt.timeout, client: client ?? events)
        }
        if target.expected == nil, let link = sessions.values.first(where: { $0.peer.address == target.address }) {
            client?.emit(Events.Connected(link.peer, peers: sessions.count))
            return .reached(link.peer)
        }
        // Its invitation may have arrived while we were looking for it.
        if let expected = target.expected, let peer = await acceptPendingInvitation(from: expected, client: client) {
            return .reached(peer)
        }
        if let expected = target.expected, let link = sessions[expected] {
            if !link.isClosing {
                client?.emit(Events.Connected(link.peer, peers: sessions.count))
                return .reached(link.peer)
            }
            // Closing: let it go first, so the peer does not take our invitation for a duplicate.
            await Link.untilDetached([link], by: min(deadline, .now + .seconds(2)))
        }
        let invitation = Invitations.Outgoing(id: Invitations.Outgoing.newID(), context: attempt.context, timeout: attempt.timeout)
        if let expected = target.expected { invitations.outgoing[expected] = invitation }
        let negotiated: Negotiated
        let tried = target.hosts
        if let remembered {
            switch await dialer.connectRemembered(remembered, query: query, deadline: deadline, sink: sink) {
            case let .connected(won, at):
                (negotiated, target) = (won, at)
            case let .failed(failure):
                invitations.forget(invitation)
                if case .cancelled = failure.error { throw failure.error }
                await dialer.forgetRemembered(remembered)
                // Discovery, browsing since the start, decides. Addresses that did not answer are not
                // waited on twice; refused ones are tried again, since the ordinary path then waits
                // for discovery to show a restarted peer's new port.
                if !failure.refusedEverywhere {
                    let found = try await dialer.resolve(query, until: deadline, timeout: attempt.timeout, client: client ?? events)
                    if found.expected == remembered.expected, found.port == remembered.port, Set(found.hosts).isSubset(of: Set(remembered.hosts)) {
                        throw failure.error
                    }
                }
                return .againWithoutRemembered
            }
        } else {
            do {
                (negotiated, target) = try await dialer.connect(target, query: query, deadline: deadline, sink: sink)
            } catch {
                invitations.forget(invitation)
                if case .connectionFailed = error, let record = target.record, await dialer.passOver(record, claiming: target.expected) {
                    return .passedOver(error)
                }
                throw error
            }
        }
        if case let .refused(_, theirs, decision) = negotiated {
            invitations.forget(invitation)
            throw Preamble.mismatch(ours: configuration.encryption, theirs: theirs, decision: decision)
        }
        if case let .foreign(_, what) = negotiated {
            invitations.forget(invitation)
            throw .connectionFailed("\(target.address) is not a nearby node (\(what))")
        }
        let expected = target.expected
        spawn { [self] in await serve(negotiated, isClient: true, expected: expected, invitation: invitation, sink: sink) }
        // The invite frame goes out once the handshake is done (`attach`); then the answer decides,
        // or the deadline, or our own cancellation.
        let outcome = await invitation.outcome.wait(until: deadline)
        invitations.forget(invitation)
        switch outcome {
        case let .connected(peer)?:
            if let client, let link = sessions[peer.id] { client.emit(Events.Connected(link.peer, peers: sessions.count)) }
            await dialer.rememberReached(peer, at: target, tried: tried)
            return .reached(peer)
        case let .declined(reason)?:
            let who = invitation.link?.peer
            sink.emit(Events.Declined(invitation: invitation.id, peer: PeerRef(id: who?.id.rawValue ?? query, name: who?.name), reason: reason))
            // The ID is in the event; the sentence says the peer as the user named it.
            throw .declined(peer: query, reason: reason)
        case let .failed(error)?:
            // A remembered address where another identity answers: forget it, let discovery decide.
            if let remembered, case .identityMismatch = error {
                await dialer.forgetRemembered(remembered)
                return .againWithoutRemembered
            }
            if remembered == nil, case .identityMismatch = error, let record = target.record, await dialer.passOver(record, claiming: target.expected) {
                return .passedOver(error)
            }
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
                await leave(
                    link, because: .ended(cancelled ? "invitation withdrawn" : "invitation timed out"),
                    telling: cancelled ? "invitation withdrawn" : "invitation timed out")
            }
            throw error
        }
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
