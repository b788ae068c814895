import Foundation
import NIOCore

extension Node {
    // MARK: Invitations we receive

    /// The node's half of an invitation: crossed invitations, policies, waiting `accept`s, expiry.
    func invited(_ invite: FrameBody.Invite, on link: Link) async {
        let peer = link.peer
        // Already in a live session with this peer (its invitation crossed ours and lost the
        // race): nothing to ask anyone. A session that has gone silent is replaced instead — the
        // peer restarted without its old connection being noticed as closed.
        if let existing = sessions[peer.id], existing !== link, existing.silence < .seconds(2) {
            await answerLink(link, accept: false, reason: SessionStateMachine.alreadyInSession, closing: "duplicate connection: already in session")
            return
        }
        // Two nodes inviting each other at once end up in one session: the smaller ID's invitation wins.
        if let mine = invitations.outgoing[peer.id], mine.isWaiting {
            if SessionMath.keepsOwnInvitation(own: identity.peerID, other: peer.id) {
                await answerLink(link, accept: false, reason: "crossed", closing: "crossed invitations: ours wins")
                return
            }
            invitations.received(id: invite.invitation, link: link, context: invite.context, expires: Date())
            events.emit(invitationEvent(invite, link: link, expires: Date(), answeredBy: "crossed invitations"))
            await answer(invite.invitation, accept: true, by: "crossed invitations", sink: events)
            return
        }
        // Another link's invitation already has this ID (the inviter chooses it): not this one.
        if invitations.incoming[invite.invitation] != nil {
            await answerLink(link, accept: false, reason: "invitation ID in use", closing: "invitation ID already pending")
            return
        }
        let lifetime = min(max(invite.timeout, 1), 300)
        let expires = Date().addingTimeInterval(lifetime)
        invitations.received(id: invite.invitation, link: link, context: invite.context, expires: expires)
        // Who answers at once, decided before the event: an invitation answered in the same moment
        // is not shown as one waiting for `nearby accept`.
        let friend = configuration.acceptFrom.contains { Self.matches($0, peer) }
        let waiter = friend || configuration.autoAccept ? nil : invitations.takeWaiter(for: peer)
        let answeredBy = friend ? configuration.acceptedBy ?? Spelling.option(.acceptFrom)
            : configuration.autoAccept ? configuration.acceptedBy ?? Spelling.option(.autoAccept)
            : waiter.map { _ in Spelling.command(.accept) }
        events.emit(invitationEvent(invite, link: link, expires: expires, answeredBy: answeredBy))

        // `--accept-from` names a friend: pinned for good. `--auto-accept` lets in a stranger.
        if friend {
            await answer(invite.invitation, accept: true, by: answeredBy ?? Spelling.option(.acceptFrom), sink: events)
            return
        }
        if configuration.autoAccept {
            link.markAutoAccepted()
            await answer(invite.invitation, accept: true, by: answeredBy ?? Spelling.option(.autoAccept), sink: events)
            return
        }
        if let waiter {
            await answer(invite.invitation, accept: !waiter.decline, by: answeredBy ?? Spelling.command(.accept), sink: TeeSink(events, waiter.sink))
            if !waiter.decline, let link = sessions[peer.id] { waiter.sink.emit(connectedEvent(link)) }
            waiter.answered.settle(waiter.decline ? nil : peer)
            return
        }
        // A stream listener attached to this node waits in vain unless someone accepts: it shows
        // the invitation, with how to accept it.
        for listener in streamWaits.listeners where !listener.claimed.isSettled && listener.wants(peer) {
            listener.sink?.emit(invitationEvent(invite, link: link, expires: expires))
        }
        let id = invite.invitation
        spawn { [self] in
            do { try await Task.sleep(for: .seconds(lifetime)) } catch { return }
            await expire(id)
        }
    }

    /// Whether `query` names a peer this node knows: on a link, seen on the network, or pinned.
    func namesAPeer(_ query: String) -> Bool {
        links.contains { Self.matches(query, $0.peer) }
            || !discovery.candidates(query, excluding: identity.peerID).isEmpty
            || knownPeers.names(query)
    }

    /// The event of an invitation that waits for an answer.
    func invitationEvent(_ pending: Invitations.Incoming) -> Events.Invitation {
        invitationEvent(FrameBody.Invite(invitation: pending.id, context: pending.context, timeout: 0), link: pending.link, expires: pending.expires)
    }

    private func invitationEvent(_ invite: FrameBody.Invite, link: Link, expires: Date, answeredBy: String? = nil) -> Events.Invitation {
        Events.Invitation(
            invitation: invite.invitation, peer: link.peer.ref, context: invite.context,
            verificationCode: link.peer.verificationCode, encrypted: link.peer.encrypted,
            expires: EventEncoder.timestamp(expires), answeredBy: answeredBy)
    }

    private func expire(_ id: String) async {
        guard let invitation = invitations.take(id) else { return }
        events.emit(Events.Declined(invitation: id, peer: invitation.link.peer.ref, reason: "expired: not answered in time"))
        await answerLink(invitation.link, accept: false, reason: "expired", closing: "invitation expired")
    }

    /// Accepts the pending invitation from `peer`, if there is one; returns the peer once in session.
    func acceptPendingInvitation(from peer: PeerID, client: (any EventSink)?) async -> AuthenticatedPeer? {
        guard let theirs = invitations.pending(from: peer) else { return nil }
        await answer(theirs.id, accept: true, by: "crossed invitations", sink: client.map { TeeSink(events, $0) } ?? events)
        guard let link = sessions[peer] else { return nil }
        client?.emit(connectedEvent(link))
        return link.peer
    }

    private func answerLink(_ link: Link, accept: Bool, reason: String?, closing: String) async {
        guard links.contains(link) else { return }
        let actions = link.step { $0.answer(accept: accept, reason: reason, closing: closing) }
        await link.perform(actions, owner: self)
    }

    private func answer(_ id: String, accept: Bool, by: String, sink: any EventSink, othersPending: Int = 0) async {
        guard let invitation = invitations.take(id) else { return }
        let link = invitation.link
        if accept {
            sink.emit(Events.Accepted(invitation: id, peer: link.peer.ref, by: by, pending: othersPending > 0 ? othersPending : nil))
        } else {
            sink.emit(Events.Declined(invitation: id, peer: link.peer.ref, reason: "declined by us"))
        }
        await answerLink(link, accept: accept, reason: "declined", closing: "we declined the invitation")
    }

    /// Answers an invitation (by ID, by peer, or the oldest pending), or waits for the next one that
    /// matches. Returns the peer now in session, or nil when we declined. Cancelling the calling task
    /// (Ctrl-C, the client went away) stops the wait and leaves no waiter behind.
    public func accept(
        _ query: String?, decline: Bool, timeout: Double? = nil, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer? {
        let sink: any EventSink = client ?? NullSink()
        let matching = invitations.pending(matching: query) { self.namesAPeer($0) }
        if let oldest = matching.first {
            let peer = oldest.link.peer
            if matching.count > 1 {
                NearbyLog.logger.notice("\(matching.count - 1) more invitation(s) pending: \(matching.dropFirst().map { "\($0.id) from \($0.link.peer.name)" }.joined(separator: ", "))")
            }
            await answer(
                oldest.id, accept: !decline, by: Spelling.command(.accept), sink: TeeSink(events, sink),
                othersPending: query == nil ? matching.count - 1 : 0)
            if !decline, let link = sessions[peer.id] { sink.emit(connectedEvent(link)) }
            return decline ? nil : peer
        }
        let service = configuration.service.name
        client?.emit(Events.Waiting(
            for: "invitation", service: service,
            reason: "waiting for an invitation\(query.map { " from \($0)" } ?? "") on \(service) (Ctrl-C to stop)"))
        let waiter = Invitations.AcceptWaiter(query: query, decline: decline, sink: sink)
        invitations.wait(waiter)
        let deadline = timeout.map { ContinuousClock.now + .seconds($0) }
        let answered = if let deadline { await waiter.answered.wait(until: deadline) } else { await waiter.answered.wait() }
        invitations.removeWaiter(waiter.id)
        guard let answered else {
            if stopping { throw .connectionFailed("the node stopped") }
            if let timeout, let deadline, !Task.isCancelled, ContinuousClock.now >= deadline {
                throw .noInvitation(from: query, seconds: timeout)
            }
            throw .cancelled("waiting for an invitation")
        }
        return answered
    }

    // MARK: Invitations we send

    /// Invites a peer and waits for the answer. Already connected: returns at once.
    public func invite(_ query: String, context: String?, timeout: Double, client: (any EventSink)?) async throws(NearbyError) -> AuthenticatedPeer {
        try await invite(query, context: context, timeout: timeout, deadline: .now + .seconds(timeout), client: client, remembering: true)
    }

    /// `remembering`: whether a remembered address may be tried before discovery answers (not again
    /// once it failed).
    private func invite(
        _ query: String, context: String?, timeout: Double, deadline: ContinuousClock.Instant, client: (any EventSink)?, remembering: Bool
    ) async throws(NearbyError) -> AuthenticatedPeer {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        if let context, context.utf8.count > FrameBody.maxContextBytes {
            throw .invalidArgument("the invitation context is \(context.utf8.count) bytes; the maximum is \(FrameBody.maxContextBytes)")
        }
        // A peer we are in a session with needs no discovery and no invitation — unless that
        // session is closing (`disconnect` returned before it was gone): then a new one is made.
        let current = sessions.values.filter { Self.matches(query, $0.peer) && $0.closeReason == nil }
        if current.count == 1, let link = current.first {
            client?.emit(connectedEvent(link))
            return link.peer
        }
        // The peer already invited us and waits for an answer: inviting it back means yes.
        if let theirs = invitations.pending(matching: query, namesAPeer: { self.namesAPeer($0) }).first,
           let peer = await acceptPendingInvitation(from: theirs.link.peer.id, client: client) {
            return peer
        }
        let remembered = remembering ? rememberedTarget(query) : nil
        var target: Target
        if let remembered {
            target = remembered
        } else {
            target = try await resolve(query, until: deadline, timeout: timeout, client: client ?? events)
        }
        if target.expected == nil, let link = sessions.values.first(where: { $0.peer.address == target.address }) {
            client?.emit(connectedEvent(link))
            return link.peer
        }
        // Its invitation may have arrived while we were looking for it.
        if let expected = target.expected, let peer = await acceptPendingInvitation(from: expected, client: client) {
            return peer
        }
        if let expected = target.expected, let link = sessions[expected] {
            if link.closeReason == nil {
                client?.emit(connectedEvent(link))
                return link.peer
            }
            // Closing: let it go first, so the peer does not take our invitation for a duplicate.
            await Link.untilDetached([link], by: min(deadline, .now + .seconds(2)))
        }
        let invitation = Invitations.Outgoing(id: Self.newInvitationID(), context: context, timeout: timeout)
        if let expected = target.expected { invitations.outgoing[expected] = invitation }
        let negotiated: Negotiated
        let tried = target.hosts
        if let remembered {
            switch await connectRemembered(remembered, query: query, deadline: deadline, sink: sink) {
            case let .connected(won, at):
                (negotiated, target) = (won, at)
            case let .failed(failure):
                invitations.forget(invitation)
                if case .cancelled = failure.error { throw failure.error }
                forgetRemembered(remembered)
                // Discovery, browsing since the start, decides. Addresses that did not answer are not
                // waited on twice; refused ones are tried again, since the ordinary path then waits
                // for discovery to show a restarted peer's new port.
                if !failure.refusedEverywhere {
                    let found = try await resolve(query, until: deadline, timeout: timeout, client: client ?? events)
                    if found.expected == remembered.expected, found.port == remembered.port, Set(found.hosts).isSubset(of: Set(remembered.hosts)) {
                        throw failure.error
                    }
                }
                return try await invite(query, context: context, timeout: timeout, deadline: deadline, client: client, remembering: false)
            }
        } else {
            do {
                (negotiated, target) = try await connect(target, query: query, deadline: deadline, sink: sink)
            } catch {
                invitations.forget(invitation)
                throw error
            }
        }
        if case let .refused(_, theirs, decision) = negotiated {
            invitations.forget(invitation)
            throw Self.mismatch(ours: configuration.encryption, theirs: theirs, decision: decision)
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
            if let client, let link = sessions[peer.id] { client.emit(connectedEvent(link)) }
            rememberReached(peer, at: target, tried: tried)
            return peer
        case let .declined(reason)?:
            let who = invitation.link?.peer
            sink.emit(Events.Declined(invitation: invitation.id, peer: PeerRef(id: who?.id.rawValue ?? query, name: who?.name), reason: reason))
            // The ID is in the event; the sentence says the peer as the user named it.
            throw .declined(peer: query, reason: reason)
        case let .failed(error)?:
            // A remembered address where another identity answers: forget it, let discovery decide.
            if let remembered, case .identityMismatch = error {
                forgetRemembered(remembered)
                return try await invite(query, context: context, timeout: timeout, deadline: deadline, client: client, remembering: false)
            }
            throw error
        case nil:
            // Out of time, or cancelled: withdraw. Settle first, so closing the link does not report
            // a lost connection instead.
            let cancelled = Task.isCancelled
            let error: NearbyError = cancelled
                ? .cancelled("inviting \(query)")
                : .invitationTimedOut(peer: query, seconds: timeout)
            invitation.outcome.settle(.failed(error))
            if let link = invitation.link {
                await leave(link, because: cancelled ? "invitation withdrawn" : "invitation timed out", telling: cancelled ? "invitation withdrawn" : "invitation timed out")
            }
            throw error
        }
    }

    // MARK: Messages and leaving

    /// Leaves sessions; the peers see `disconnected` with our reason.
    public func disconnect(_ query: String?, all: Bool, client: (any EventSink)?) async throws(NearbyError) -> [PeerRef] {
        let targets: [Link]
        if all {
            targets = Array(sessions.values)
        } else if let query {
            let asked = try PeerQuery(query)
            switch asked.choose(Array(sessions.values), id: \.peer.id.rawValue, name: \.peer.name) {
            case .none: throw .notConnected(query)
            case let .one(link): targets = [link]
            case let .ambiguous(links): throw asked.ambiguity(links, id: \.peer.id.rawValue, name: \.peer.name)
            }
        } else {
            targets = []
        }
        for link in targets {
            await leave(link, because: "we left: disconnected by us", telling: "disconnected")
        }
        await Link.untilDetached(targets, by: .now + .seconds(1))
        let left = targets.map(\.peer.ref)
        if let client {
            for peer in left { client.emit(Events.Disconnected(peer: peer, reason: "we left: disconnected by us", peers: sessions.count)) }
        }
        return left
    }

    static func matches(_ query: String, _ peer: AuthenticatedPeer) -> Bool {
        PeerQuery.matches(query, id: peer.id.rawValue, name: peer.name)
    }

    static func newInvitationID() -> String {
        String((0..<10).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement() ?? "0" })
    }
}
