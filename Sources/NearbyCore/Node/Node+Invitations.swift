import Foundation
import NIOCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

extension Node {
    // MARK: Invitations we receive

    /// The node's half of an invitation: `InvitationPolicy` decides from what the node knows (crossed
    /// invitations, policies, waiting `accept`s); this carries its actions out.
    func invited(_ invite: FrameBody.Invite, on link: Link) async {
        let peer = link.peer
        let facts = InvitationPolicy.Facts(
            liveSessionElsewhere: sessions[peer.id].map { $0 !== link && $0.silence < InvitationPolicy.duplicateSilence } ?? false,
            ourInvitationWaiting: invitations.outgoing[peer.id]?.isWaiting == true,
            oursWins: SessionMath.keepsOwnInvitation(own: identity.peerID, other: peer.id),
            idInUse: invitations.incoming[invite.invitation] != nil,
            friend: configuration.acceptFrom.contains { Self.matches($0, peer) },
            autoAccept: configuration.autoAccept, acceptedBy: configuration.acceptedBy,
            acceptWaiting: invitations.hasWaiter(for: peer))
        var expires = Date()
        for action in InvitationPolicy.decide(timeout: invite.timeout, facts) {
            switch action {
            case let .decline(reason, closing):
                await answerLink(link, accept: false, reason: reason, closing: closing)
            case let .hold(lifetime, answeredBy):
                expires = Date().addingTimeInterval(lifetime)
                invitations.received(id: invite.invitation, link: link, context: invite.context, expires: expires)
                events.emit(Events.Invitation(invite, from: link.peer, expires: expires, answeredBy: answeredBy))
            case .markAutoAccepted:
                link.markAutoAccepted()
            case let .accept(by):
                await answer(invite.invitation, accept: true, by: by, sink: events)
            case .answerWaiter:
                guard let waiter = invitations.takeWaiter(for: peer) else { continue }
                await answer(invite.invitation, accept: !waiter.decline, by: Spelling.command(.accept), sink: TeeSink(events, waiter.sink))
                if !waiter.decline, let link = sessions[peer.id] { waiter.sink.emit(Events.Connected(link.peer, peers: sessions.count)) }
                waiter.answered.settle(.answered(waiter.decline ? nil : peer))
            case .showListeners:
                // A stream listener attached to this node waits in vain unless someone accepts: it
                // shows the invitation, with how to accept it.
                for listener in streamWaits.listeners where !listener.claimed.isSettled && listener.wants(peer) {
                    listener.sink?.emit(Events.Invitation(invite, from: link.peer, expires: expires))
                }
            case let .expire(lifetime):
                let id = invite.invitation
                spawn { [self] in
                    do { try await Task.sleep(for: .seconds(lifetime)) } catch { return }
                    await expire(id)
                }
            }
        }
    }

    /// Whether `query` names a peer this node knows: on a link, seen on the network, or pinned.
    func namesAPeer(_ query: String) async -> Bool {
        if links.contains(where: { Self.matches(query, $0.peer) }) || knownPeers.names(query) { return true }
        return await dialer.discovers(query)
    }

    /// The invitations waiting for an answer that `query` names (nil: all), oldest first.
    func pendingInvitations(matching query: String?) async -> [Invitations.Incoming] {
        // Those from a peer the query names, at once; only when there are none does the dialer say
        // whether discovery knows the name (the table is read again after that wait).
        let byPeer = invitations.pending(matching: query) { _ in true }
        guard let query, byPeer.isEmpty else { return byPeer }
        let named = await namesAPeer(query)
        return invitations.pending(matching: query) { _ in named }
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
        client?.emit(Events.Connected(link.peer, peers: sessions.count))
        return link.peer
    }

    private func answerLink(_ link: Link, accept: Bool, reason: String?, closing: String) async {
        guard links.contains(link) else { return }
        await link.answer(accept: accept, reason: reason, closing: closing, owner: self)
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
    package func accept(
        _ query: String?, decline: Bool, timeout: Double? = nil, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer? {
        let sink: any EventSink = client ?? NullSink()
        let matching = await pendingInvitations(matching: query)
        if let oldest = matching.first {
            let peer = oldest.link.peer
            if matching.count > 1 {
                NearbyLog.logger.notice("\(matching.count - 1) more invitation(s) pending: \(matching.dropFirst().map { "\($0.id) from \($0.link.peer.name)" }.joined(separator: ", "))")
            }
            await answer(
                oldest.id, accept: !decline, by: Spelling.command(.accept), sink: TeeSink(events, sink),
                othersPending: query == nil ? matching.count - 1 : 0)
            if !decline, let link = sessions[peer.id] { sink.emit(Events.Connected(link.peer, peers: sessions.count)) }
            return decline ? nil : peer
        }
        let service = configuration.service.name
        client?.emit(Events.Waiting(
            for: "invitation", service: service,
            reason: "waiting for an invitation\(query.map { " from \($0)" } ?? "") on \(service) (Ctrl-C to stop)"))
        let waiter = Invitations.AcceptWaiter(query: query, decline: decline, sink: sink)
        invitations.wait(waiter)
        defer { invitations.removeWaiter(waiter.id) }
        return try await waiter.answer(timeout: timeout)
    }

    // MARK: Messages and leaving

    /// Leaves sessions; the peers see `disconnected` with our reason.
    package func disconnect(_ query: String?, all: Bool, client: (any EventSink)?) async throws(NearbyError) -> [PeerRef] {
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
            await leave(link, because: .weLeft("disconnected by us"), telling: "disconnected")
        }
        await Link.untilDetached(targets, by: .now + .seconds(1))
        let left = targets.map(\.peer.ref)
        if let client {
            for peer in left { client.emit(Events.Disconnected(peer: peer, reason: "\(CloseReason.weLeft("disconnected by us"))", peers: sessions.count)) }
        }
        return left
    }

    static func matches(_ query: String, _ peer: AuthenticatedPeer) -> Bool {
        PeerQuery.matches(query, id: peer.id.rawValue, name: peer.name)
    }
}
