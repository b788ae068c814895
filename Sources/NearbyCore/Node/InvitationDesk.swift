import Foundation
import NIOCore
import NearbyBase
import NearbyIdentity
import NearbyWire

/// The invitation desk: every invitation in flight, both ways (`Invitations`), with its expiry,
/// and the `nearby accept`s waiting for one. `InvitationPolicy` decides about an invitation we
/// receive and `InviteAttempts` about our own tries (InvitationDesk+Inviting.swift); the desk
/// carries the decisions out. It runs on the node — its calls run where they are called from
/// (`nonisolated(nonsending)`), the node, so it adds no hop and no interleaving — and it is handed
/// what it needs instead of the node: the `Sessions` it reads and tells through, the `Dialer`, the
/// listeners to show an invitation to, and `NodeTasks` for its timers and the connections it dials.
final class InvitationDesk {
    var table = Invitations()
    let sessions: Sessions
    let configuration: NodeConfiguration
    /// This node's peer ID.
    let me: PeerID
    let events: any EventSink
    let knownPeers: KnownPeers
    let dialer: Dialer
    /// The stream listeners, which see the invitations they may be waiting for.
    let streams: StreamMatchmaker
    let tasks: NodeTasks

    init(
        sessions: Sessions, configuration: NodeConfiguration, me: PeerID, events: any EventSink, knownPeers: KnownPeers,
        dialer: Dialer, streams: StreamMatchmaker, tasks: NodeTasks
    ) {
        self.sessions = sessions
        self.configuration = configuration
        self.me = me
        self.events = events
        self.knownPeers = knownPeers
        self.dialer = dialer
        self.streams = streams
        self.tasks = tasks
    }

    // MARK: Invitations we receive

    /// What the node knows goes into `InvitationPolicy`; this carries its actions out.
    nonisolated(nonsending) func invited(_ invite: FrameBody.Invite, on link: Link) async {
        let peer = link.peer
        let facts = InvitationPolicy.Facts(
            liveSessionElsewhere: sessions[peer.id].map { $0 !== link && $0.silence < InvitationPolicy.duplicateSilence } ?? false,
            ourInvitationWaiting: table.outgoing[peer.id]?.isWaiting == true,
            oursWins: SessionMath.keepsOwnInvitation(own: me, other: peer.id),
            idInUse: table.incoming[invite.invitation] != nil,
            friend: configuration.acceptFrom.contains { Node.matches($0, peer) },
            autoAccept: configuration.autoAccept, acceptedBy: configuration.acceptedBy,
            acceptWaiting: table.hasWaiter(for: peer))
        var expires = Date()
        for action in InvitationPolicy.decide(timeout: invite.timeout, facts) {
            switch action {
            case let .decline(reason, closing):
                await answerLink(link, accept: false, reason: reason, closing: closing)
            case let .hold(lifetime, answeredBy):
                expires = Date().addingTimeInterval(lifetime)
                table.received(id: invite.invitation, link: link, context: invite.context, offer: invite.offer?.bounded, expires: expires)
                events.emit(Events.Invitation(invite, from: link.peer, expires: expires, answeredBy: answeredBy))
            case .markAutoAccepted:
                link.markAutoAccepted()
            case let .accept(by):
                await answer(invite.invitation, accept: true, by: by, sink: events)
            case .answerWaiter:
                guard let waiter = table.takeWaiter(for: peer) else { continue }
                await answer(invite.invitation, accept: !waiter.decline, by: Spelling.command(.accept), sink: TeeSink(events, waiter.sink))
                if !waiter.decline { sessions.reached(peer.id, telling: waiter.sink) }
                waiter.answered.settle(.answered(waiter.decline ? nil : peer))
            case .showListeners:
                // A stream listener attached to this node waits in vain unless someone accepts: it
                // shows the invitation, with how to accept it.
                streams.show(Events.Invitation(invite, from: link.peer, expires: expires), to: peer)
            case let .expire(lifetime):
                let id = invite.invitation
                tasks.after(.seconds(lifetime), .invitationExpires(id))
            }
        }
    }

    /// Whether `query` names a peer this node knows: on a link, seen on the network, or pinned.
    private nonisolated(nonsending) func namesAPeer(_ query: String) async -> Bool {
        if sessions.anyLink(matching: query) || knownPeers.names(query) { return true }
        return await dialer.discovers(query)
    }

    /// The invitations waiting for an answer that `query` names (nil: all), oldest first.
    nonisolated(nonsending) func pending(matching query: String?) async -> [Invitations.Incoming] {
        // Those from a peer the query names, at once; only when there are none does the dialer say
        // whether discovery knows the name (the table is read again after that wait).
        let byPeer = table.pending(matching: query) { _ in true }
        guard let query, byPeer.isEmpty else { return byPeer }
        let named = await namesAPeer(query)
        return table.pending(matching: query) { _ in named }
    }

    /// The invitations waiting for an answer, oldest first (a stream listener shows them).
    var waiting: [Invitations.Incoming] { table.waiting }

    nonisolated(nonsending) func expire(_ id: String) async {
        guard let invitation = table.take(id) else { return }
        events.emit(Events.Declined(invitation: id, peer: invitation.link.peer.ref, reason: "expired: not answered in time"))
        await answerLink(invitation.link, accept: false, reason: "expired", closing: "invitation expired")
    }

    /// Accepts the pending invitation from `peer`, if there is one; returns the peer once in session.
    nonisolated(nonsending) func acceptPending(from peer: PeerID, client: (any EventSink)?) async -> AuthenticatedPeer? {
        guard let theirs = table.pending(from: peer) else { return nil }
        await answer(theirs.id, accept: true, by: "crossed invitations", sink: client.map { TeeSink(events, $0) } ?? events)
        return sessions.reached(peer, telling: client)
    }

    private nonisolated(nonsending) func answerLink(_ link: Link, accept: Bool, reason: String?, closing: String) async {
        guard sessions.holds(link) else { return }
        await link.answer(accept: accept, reason: reason, closing: closing)
    }

    private nonisolated(nonsending) func answer(_ id: String, accept: Bool, by: String, sink: any EventSink, othersPending: Int = 0) async {
        guard let invitation = table.take(id) else { return }
        let link = invitation.link
        if accept {
            sink.emit(Events.Accepted(invitation: id, peer: link.peer.ref, by: by, pending: othersPending > 0 ? othersPending : nil))
        } else {
            sink.emit(Events.Declined(invitation: id, peer: link.peer.ref, reason: Events.Declined.byUs))
        }
        await answerLink(link, accept: accept, reason: "declined", closing: "we declined the invitation")
    }

    /// Answers an invitation (by ID, by peer, or the oldest pending), or waits for the next one that
    /// matches. Returns the peer now in session, or nil when we declined. Cancelling the calling task
    /// (Ctrl-C, the client went away) stops the wait and leaves no waiter behind.
    nonisolated(nonsending) func accept(
        _ query: String?, decline: Bool, timeout: Double?, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer? {
        let sink: any EventSink = client ?? NullSink()
        let matching = await pending(matching: query)
        if let oldest = matching.first {
            let peer = oldest.link.peer
            if matching.count > 1 {
                NearbyLog.logger.notice("\(matching.count - 1) more invitation(s) pending: \(matching.dropFirst().map { "\($0.id) from \($0.link.peer.name)" }.joined(separator: ", "))")
            }
            await answer(
                oldest.id, accept: !decline, by: Spelling.command(.accept), sink: TeeSink(events, sink),
                othersPending: query == nil ? matching.count - 1 : 0)
            if !decline { sessions.reached(peer.id, telling: sink) }
            return decline ? nil : peer
        }
        let service = configuration.service.name
        client?.emit(Events.Waiting(
            for: "invitation", service: service,
            reason: "waiting for an invitation\(query.map { " from \($0)" } ?? "") on \(service) \(timeout == nil ? "(Ctrl-C to stop)" : WaitEnds.words(timeout))"))
        let waiter = Invitations.AcceptWaiter(query: query, decline: decline, sink: sink)
        table.wait(waiter)
        defer { table.removeWaiter(waiter.id) }
        return try await waiter.answer(timeout: timeout)
    }

    // MARK: What the node's links tell it

    /// Our invitation's connection proved its identity: the invite frame goes out on it, unless the
    /// peer is in session already (HOST:PORT, or crossed invitations that settled the other way) or
    /// the invitation was settled meanwhile.
    nonisolated(nonsending) func attached(_ link: Link, invitation: Invitations.Outgoing, sink: any EventSink) async {
        if let existing = sessions[link.peer.id] {
            invitation.outcome.settle(.connected(existing.peer))
            await sessions.leave(link, because: .ended("not needed: already in session"), telling: "already in session")
            return
        }
        guard invitation.isWaiting else {
            await sessions.leave(link, because: .ended("not needed: the invitation was settled"), telling: "already in session")
            return
        }
        invitation.link = link
        if table.outgoing[link.peer.id] == nil { table.outgoing[link.peer.id] = invitation }
        sink.emit(Events.Invited(
            invitation: invitation.id, peer: link.peer.ref, address: link.peer.address,
            verificationCode: link.peer.verificationCode, encrypted: link.peer.encrypted))
        await link.invite(id: invitation.id, context: invitation.context, timeout: invitation.timeout, offer: invitation.offer)
    }

    /// A session with `peer` began: our invitation to it is answered.
    func connected(_ peer: AuthenticatedPeer) {
        if let pending = table.outgoing.removeValue(forKey: peer.id) { pending.outcome.settle(.connected(peer)) }
    }

    /// The peer declined our invitation on `link`.
    func declined(on link: Link, reason: String) {
        if let pending = table.outgoing[link.peer.id], pending.link === link {
            table.outgoing[link.peer.id] = nil
            pending.outcome.settle(.declined(reason))
        }
    }

    /// Our invitation and the peer's crossed: our session with it arrives on its connection, so keep
    /// waiting for that, and accept its invitation if it is already here.
    nonisolated(nonsending) func crossed(on link: Link) async {
        if let pending = table.outgoing[link.peer.id], pending.link === link { pending.link = nil }
        _ = await acceptPending(from: link.peer.id, client: nil)
    }

    /// `link` closed (`reason`): its invitations are withdrawn, and ours on it failed.
    func closed(_ link: Link, reason: String) {
        for invitation in table.withdraw(on: link) {
            events.emit(Events.Declined(invitation: invitation.id, peer: link.peer.ref, reason: "withdrawn: \(reason)"))
        }
        if let pending = table.outgoing[link.peer.id], pending.link === link, pending.isWaiting {
            table.outgoing[link.peer.id] = nil
            pending.outcome.settle(.failed(.connectionFailed("\(link.peer.id) closed the connection before answering: \(reason)")))
        }
    }

    /// The node stops: every waiting `accept` ends.
    func stop() { table.endWaiters() }
}
