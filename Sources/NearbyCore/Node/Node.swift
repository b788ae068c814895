import Foundation
import NIOCore
import NIOSSL

/// How a node runs.
public struct NodeConfiguration: Sendable {
    public var service: ServiceType
    public var encryption: EncryptionPreference = .required
    /// Publish a DNS-SD advertisement (advertise, accept). Initiating and one-shot nodes do not.
    public var advertise = false
    public var displayName: String?
    public var info: [String: String] = [:]
    /// Where received files land (default: the working directory).
    public var saveDirectory = FileManager.default.currentDirectoryPath
    public var port = 0
    public var autoAccept = false
    public var acceptFrom: [String] = []

    public init(service: ServiceType) { self.service = service }
}

/// The node: this identity's presence for one service type. It owns the advertisement, the
/// listening socket, discovery, and every link and session; all commands act through it.
public actor Node {
    public nonisolated let identity: Identity
    public nonisolated let configuration: NodeConfiguration
    public nonisolated let events: any EventSink
    let knownPeers: KnownPeers
    let tls: SessionTLS.Contexts

    private var advertiser: Advertiser?
    private var listener: (any Channel)?
    public private(set) var port = 0
    private var browser: Browser?
    private var discovered: [String: DiscoveredPeer] = [:]
    var tasks: [Task<Void, Never>] = []

    /// Every authenticated connection and where it is in the session protocol.
    var links: [Link: SessionStateMachine] = [:]
    var sessions: [PeerID: Link] = [:]
    private var incoming: [String: IncomingInvitation] = [:]
    private var outgoing: [PeerID: OutgoingInvitation] = [:]
    private var acceptWaiters: [AcceptWaiter] = []
    private var sessionWatchers: [UUID: AsyncStream<SessionChange>.Continuation] = [:]
    private var stopping = false
    /// File channels this node opened (sending) and was opened (receiving), per link.
    var outgoingFiles: [ChannelKey: OutgoingChannel] = [:]
    var incomingFiles: [ChannelKey: IncomingFile] = [:]
    var nextChannel: [Link: UInt32] = [:]
    /// Streams in progress, incoming ones waiting for a listener, and listeners waiting for one.
    var streams: [ChannelKey: StreamChannel] = [:]
    var pendingStreams: [PendingStream] = []
    var streamListeners: [StreamListener] = []

    struct IncomingInvitation {
        let id: String
        let link: Link
        let context: String?
        let expires: Date
    }

    final class OutgoingInvitation: @unchecked Sendable {
        let id: String
        let context: String?
        let timeout: Double
        var link: Link?
        private var continuation: CheckedContinuation<InviteOutcome, Never>?
        private var early: InviteOutcome?
        init(id: String, context: String?, timeout: Double) {
            self.id = id
            self.context = context
            self.timeout = timeout
        }
        /// Actor-isolated callers only, like `resolve`.
        func wait() async -> InviteOutcome {
            if let early { return early }
            return await withCheckedContinuation { continuation = $0 }
        }
        func resolve(_ outcome: InviteOutcome) {
            guard early == nil else { return }
            early = outcome
            continuation?.resume(returning: outcome)
            continuation = nil
        }
        var isWaiting: Bool { early == nil }
    }

    enum InviteOutcome: Sendable {
        case connected(AuthenticatedPeer)
        case declined(String)
        case failed(NearbyError)
    }

    struct AcceptWaiter {
        let id = UUID()
        let query: String?
        let decline: Bool
        let sink: any EventSink
        let continuation: CheckedContinuation<AuthenticatedPeer?, Never>
    }

    public enum SessionChange: Sendable {
        case connected(PeerID)
        case disconnected(PeerID, remaining: Int)
    }

    public init(identity: Identity, configuration: NodeConfiguration, paths: NearbyPaths, events: any EventSink) throws(NearbyError) {
        self.identity = identity
        self.configuration = configuration
        self.events = events
        self.knownPeers = KnownPeers(paths: paths)
        do {
            tls = try SessionTLS.contexts(for: identity)
        } catch {
            throw .connectionFailed("cannot set up TLS: \(error)")
        }
    }

    var displayName: String { configuration.displayName ?? identity.displayName }

    /// The `advertising` event: who this node is, on which service and port, with what info.
    public var advertisingEvent: Events.Advertising {
        Events.Advertising(
            peer: PeerRef(id: identity.peerID.rawValue, name: displayName), service: configuration.service.name,
            domain: "local.", port: port, info: configuration.info)
    }
    public var sessionCount: Int { sessions.count }
    public var connectedPeers: [AuthenticatedPeer] { sessions.values.map(\.peer).sorted { $0.id < $1.id } }

    // MARK: Starting and stopping

    /// Opens the listening socket and, when configured, advertises. Returns the `advertising` event's
    /// content once the daemon confirmed.
    public func start() async throws(NearbyError) {
        let events = self.events
        let listener = try await Connections.listen(port: configuration.port, preference: configuration.encryption, tls: tls.server) { negotiated in
            Task { await self.serve(negotiated, isClient: false, expected: nil, invitation: nil, sink: events) }
        }
        self.listener = listener
        port = listener.localAddress?.port ?? 0
        NearbyLog.logger.info("listening for sessions on port \(port) (encryption \(configuration.encryption.rawValue))")
        guard configuration.advertise else { return }
        let txt = TXTRecord(displayName: displayName, info: configuration.info, protocolVersion: TXTRecord.protocolVersion)
        let advertiser = Advertiser(service: configuration.service, instance: identity.peerID.rawValue, port: UInt16(port), txt: txt)
        try await advertiser.start()
        self.advertiser = advertiser
    }

    /// Says goodbye to every peer, withdraws the advertisement, closes everything.
    public func stop(reason: String = "the node stopped") async {
        guard !stopping else { return }
        stopping = true
        advertiser?.stop()
        browser?.stop()
        endStreamListeners()
        for link in links.keys {
            await leave(link, because: "we left: \(reason)", telling: reason)
        }
        // Give the peers a moment to close their side, and the links to report `disconnected`.
        for _ in 0..<80 where !links.isEmpty { try? await Task.sleep(for: .milliseconds(25)) }
        try? await listener?.close()
        tasks.forEach { $0.cancel() }
    }

    /// Session changes, for commands that stay "until the peer leaves".
    public func sessionChanges() -> AsyncStream<SessionChange> {
        let (stream, continuation) = AsyncStream<SessionChange>.makeStream()
        let id = UUID()
        sessionWatchers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unwatch(id) } }
        return stream
    }

    private func unwatch(_ id: UUID) { sessionWatchers[id] = nil }

    // MARK: Incoming connections

    /// Runs one connection from preamble to close. Returns the reason it ended.
    nonisolated func serve(
        _ negotiated: Negotiated, isClient: Bool, expected: PeerID?, invitation: OutgoingInvitation?, sink: any EventSink
    ) async {
        let connection: FrameChannel
        switch negotiated {
        case let .foreign(remote, what):
            events.emit(Events.Rejected(address: remote, reason: "not a nearby peer: \(what)", code: "not-a-nearby-peer"))
            return
        case let .refused(remote, theirs, decision):
            let error = Self.mismatch(ours: configuration.encryption, theirs: theirs, decision: decision)
            events.emit(Events.Rejected(address: remote, reason: error.errorDescription ?? "", code: error.code))
            return
        case let .frames(frames):
            connection = frames
        }
        var link: Link?
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                let peer = try await Handshake.run(
                    inbound: &iterator, outbound: outbound, connection: connection, isClient: isClient,
                    identity: identity, displayName: displayName, expected: expected, knownPeers: knownPeers)
                let established = Link(peer: peer, isClient: isClient, outbound: outbound, channel: connection.channel.channel)
                link = established
                await attach(established, invitation: invitation, sink: sink)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await Keepalive.run(established) }
                    while let frame = try await iterator.next() {
                        established.heard()
                        try await received(frame, on: established)
                    }
                    group.cancelAll()
                }
            }
        } catch {
            let why = Self.describe(error)
            if let link {
                link.setReason(why)
            } else {
                let nearbyError = (error as? NearbyError) ?? .connectionFailed("handshake with \(connection.remote) failed: \(why)")
                events.emit(Events.Rejected(address: connection.remote, reason: nearbyError.errorDescription ?? why, code: nearbyError.code))
                if let invitation { await resolve(invitation, .failed(nearbyError)) }
            }
        }
        if let link { await detach(link) }
    }

    private func resolve(_ invitation: OutgoingInvitation, _ outcome: InviteOutcome) { invitation.resolve(outcome) }

    nonisolated static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NearbyError: error.errorDescription ?? "\(error)"
        case let error as ProtocolViolation: "protocol violation: \(error)"
        case let error as HandshakeFailure: "\(error)"
        case NIOSSLError.uncleanShutdown: "connection lost (closed without a goodbye)"
        case let error as NIOSSLError: "TLS failed: \(error)"
        case is ChannelError: "connection lost"
        default: "connection lost (\(error))"
        }
    }

    nonisolated static func mismatch(ours: EncryptionPreference, theirs: EncryptionPreference?, decision: Preamble.Decision) -> NearbyError {
        let other = theirs?.rawValue ?? (decision == .refusedRequired ? "required" : "none")
        return .encryptionMismatch(ours: ours.rawValue, theirs: other)
    }

    private func attach(_ link: Link, invitation: OutgoingInvitation?, sink: any EventSink) async {
        NearbyLog.logger.info("\(link.peer.id) (\(link.peer.name)) proved its identity at \(link.peer.address); \(link.peer.encrypted ? "TLS 1.3" : "plaintext"), code \(link.peer.verificationCode)")
        var machine = SessionStateMachine()
        links[link] = machine
        guard let invitation else { return }
        if let existing = sessions[link.peer.id] {
            // Already in session with whoever this turned out to be (HOST:PORT, or crossed
            // invitations that settled the other way): use that session, drop this connection.
            invitation.resolve(.connected(existing.peer))
            await leave(link, because: "not needed: already in session", telling: "already in session")
            return
        }
        guard invitation.isWaiting else {
            await leave(link, because: "not needed: the invitation was settled", telling: "already in session")
            return
        }
        invitation.link = link
        if outgoing[link.peer.id] == nil { outgoing[link.peer.id] = invitation }
        sink.emit(Events.Invited(
            invitation: invitation.id, peer: link.peer.ref, address: link.peer.address,
            verificationCode: link.peer.verificationCode, encrypted: link.peer.encrypted))
        let actions = machine.invite(id: invitation.id, context: invitation.context, timeout: invitation.timeout)
        links[link] = machine
        await perform(actions, on: link)
    }

    private func detach(_ link: Link) {
        NearbyLog.logger.info("connection with \(link.peer.id) closed: \(link.closeReason ?? "connection lost")")
        links[link] = nil
        transfersLost(on: link)
        let reason = link.closeReason ?? "connection lost"
        if sessions[link.peer.id] === link {
            sessions[link.peer.id] = nil
            events.emit(Events.Disconnected(peer: link.peer.ref, reason: reason, peers: sessions.count))
            notify(.disconnected(link.peer.id, remaining: sessions.count))
        }
        for invitation in incoming.values where invitation.link === link {
            incoming[invitation.id] = nil
            events.emit(Events.Declined(invitation: invitation.id, peer: link.peer.ref, reason: "withdrawn: \(reason)"))
        }
        if let pending = outgoing[link.peer.id], pending.link === link, pending.isWaiting {
            outgoing[link.peer.id] = nil
            pending.resolve(.failed(.connectionFailed("\(link.peer.id) closed the connection before answering: \(reason)")))
        }
    }

    private func notify(_ change: SessionChange) {
        for continuation in sessionWatchers.values { continuation.yield(change) }
    }

    // MARK: Frames

    private func received(_ frame: Frame, on link: Link) async throws {
        guard var machine = links[link] else { return }
        let actions = try machine.received(frame)
        links[link] = machine
        await perform(actions, on: link)
    }

    /// Carries out what a link's state machine decided.
    private func perform(_ actions: [SessionStateMachine.Action], on link: Link) async {
        for action in actions {
            switch action {
            case let .send(frame):
                await link.send(frame)
            case let .invitation(invite):
                await invited(invite, on: link)
            case .connected:
                connect(link)
            case let .declined(_, reason):
                if let pending = outgoing[link.peer.id], pending.link === link {
                    outgoing[link.peer.id] = nil
                    pending.resolve(.declined(reason))
                }
            case .crossed:
                // Our session with this peer arrives on its connection: keep waiting for that, and
                // accept its invitation if it is already here.
                if let pending = outgoing[link.peer.id], pending.link === link { pending.link = nil }
                _ = await acceptPendingInvitation(from: link.peer.id, client: nil)
            case let .message(bytes):
                let text = String(validating: bytes, as: UTF8.self)
                events.emit(Events.Message(
                    peer: link.peer.ref, text: text, data: text == nil ? Data(bytes).base64EncodedString() : nil, bytes: bytes.count))
            case let .channel(frame):
                await channelFrame(frame, on: link)
            case let .close(reason):
                await link.finish(because: reason)
            }
        }
    }

    /// Says goodbye on a link and closes it once everything queued is written.
    private func leave(_ link: Link, because why: String, telling reason: String) async {
        guard var machine = links[link] else { return }
        let actions = machine.leave(telling: reason)
        links[link] = machine
        await perform(actions, on: link)
        await link.finish(because: why)
    }

    /// The node's half of an invitation: crossed invitations, policies, waiting `accept`s, expiry.
    private func invited(_ invite: Control.Invite, on link: Link) async {
        let peer = link.peer
        // Already in a live session with this peer (its invitation crossed ours and lost the
        // race): nothing to ask anyone. A session that has gone silent is replaced instead — the
        // peer restarted without its old connection being noticed as closed.
        if let existing = sessions[peer.id], existing !== link, existing.silence < .seconds(2) {
            await answerLink(link, accept: false, reason: SessionStateMachine.alreadyInSession, closing: "duplicate connection: already in session")
            return
        }
        // Two nodes inviting each other at once end up in one session: the smaller ID's invitation wins.
        if let mine = outgoing[peer.id], mine.isWaiting {
            if SessionMath.keepsOwnInvitation(own: identity.peerID, other: peer.id) {
                await answerLink(link, accept: false, reason: "crossed", closing: "crossed invitations: ours wins")
                return
            }
            incoming[invite.invitation] = IncomingInvitation(id: invite.invitation, link: link, context: invite.context, expires: Date())
            events.emit(invitationEvent(invite, link: link, expires: Date()))
            await answer(invite.invitation, accept: true, by: "crossed invitations", sink: events)
            return
        }
        let lifetime = min(max(invite.timeout, 1), 300)
        let expires = Date().addingTimeInterval(lifetime)
        incoming[invite.invitation] = IncomingInvitation(id: invite.invitation, link: link, context: invite.context, expires: expires)
        events.emit(invitationEvent(invite, link: link, expires: expires))

        if configuration.autoAccept || configuration.acceptFrom.contains(where: { Self.matches($0, peer) }) {
            await answer(invite.invitation, accept: true, by: configuration.autoAccept ? "--auto-accept" : "--accept-from", sink: events)
            return
        }
        if let index = acceptWaiters.firstIndex(where: { $0.query.map { Self.matches($0, peer) } ?? true }) {
            let waiter = acceptWaiters.remove(at: index)
            await answer(invite.invitation, accept: !waiter.decline, by: "nearby accept", sink: TeeSink(events, waiter.sink))
            if !waiter.decline, let link = sessions[peer.id] { waiter.sink.emit(connectedEvent(link)) }
            waiter.continuation.resume(returning: waiter.decline ? nil : peer)
            return
        }
        let id = invite.invitation
        tasks.append(Task {
            try? await Task.sleep(for: .seconds(lifetime))
            await self.expire(id)
        })
    }

    /// Accepts the pending invitation from `peer`, if there is one; returns the peer once in session.
    private func acceptPendingInvitation(from peer: PeerID, client: (any EventSink)?) async -> AuthenticatedPeer? {
        guard let theirs = incoming.values.first(where: { $0.link.peer.id == peer }) else { return nil }
        await answer(theirs.id, accept: true, by: "crossed invitations", sink: client.map { TeeSink(events, $0) } ?? events)
        guard let link = sessions[peer] else { return nil }
        client?.emit(connectedEvent(link))
        return link.peer
    }

    private func answerLink(_ link: Link, accept: Bool, reason: String?, closing: String) async {
        guard var machine = links[link] else { return }
        let actions = machine.answer(accept: accept, reason: reason, closing: closing)
        links[link] = machine
        await perform(actions, on: link)
    }

    private func invitationEvent(_ invite: Control.Invite, link: Link, expires: Date) -> Events.Invitation {
        Events.Invitation(
            invitation: invite.invitation, peer: link.peer.ref, context: invite.context,
            verificationCode: link.peer.verificationCode, encrypted: link.peer.encrypted,
            expires: EventEncoder.timestamp(expires))
    }

    private func expire(_ id: String) async {
        guard let invitation = incoming.removeValue(forKey: id) else { return }
        events.emit(Events.Declined(invitation: id, peer: invitation.link.peer.ref, reason: "expired: not answered in time"))
        await answerLink(invitation.link, accept: false, reason: "expired", closing: "invitation expired")
    }

    private func connect(_ link: Link) {
        if let previous = sessions[link.peer.id], previous !== link {
            sessions[link.peer.id] = nil
            previous.close(because: "replaced by a new connection")
        }
        sessions[link.peer.id] = link
        events.emit(connectedEvent(link))
        notify(.connected(link.peer.id))
        if let pending = outgoing.removeValue(forKey: link.peer.id) { pending.resolve(.connected(link.peer)) }
    }

    private func connectedEvent(_ link: Link) -> Events.Connected {
        Events.Connected(
            peer: link.peer.ref, address: link.peer.address, verificationCode: link.peer.verificationCode,
            encrypted: link.peer.encrypted, peers: sessions.count)
    }

    // MARK: Commands

    /// Answers an invitation (by ID, by peer, or the next one), or waits for the next that matches.
    /// Returns the peer now in session, or nil when we declined.
    public func accept(_ query: String?, decline: Bool, client: (any EventSink)?) async -> AuthenticatedPeer? {
        let sink: any EventSink = client ?? NullSink()
        let pending = incoming.values.sorted { $0.expires < $1.expires }.first { invitation in
            guard let query else { return true }
            return invitation.id == query || Self.matches(query, invitation.link.peer)
        }
        if let pending {
            let peer = pending.link.peer
            await answer(pending.id, accept: !decline, by: "nearby accept", sink: TeeSink(events, sink))
            if !decline, let link = sessions[peer.id] { sink.emit(connectedEvent(link)) }
            return decline ? nil : peer
        }
        return await withCheckedContinuation { continuation in
            acceptWaiters.append(AcceptWaiter(query: query, decline: decline, sink: sink, continuation: continuation))
        }
    }

    private func answer(_ id: String, accept: Bool, by: String, sink: any EventSink) async {
        guard let invitation = incoming.removeValue(forKey: id) else { return }
        let link = invitation.link
        if accept {
            sink.emit(Events.Accepted(invitation: id, peer: link.peer.ref, by: by))
        } else {
            sink.emit(Events.Declined(invitation: id, peer: link.peer.ref, reason: "declined by us"))
        }
        await answerLink(link, accept: accept, reason: "declined", closing: "we declined the invitation")
    }

    /// Invites a peer and waits for the answer. Already connected: returns at once.
    public func invite(_ query: String, context: String?, timeout: Double, client: (any EventSink)?) async throws(NearbyError) -> AuthenticatedPeer {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        if let context, context.utf8.count > Control.maxContextBytes {
            throw .invalidArgument("the invitation context is \(context.utf8.count) bytes; the maximum is \(Control.maxContextBytes)")
        }
        // A peer we are in a session with needs no discovery and no invitation.
        let current = sessions.values.filter { Self.matches(query, $0.peer) }
        if current.count == 1, let link = current.first {
            client?.emit(connectedEvent(link))
            return link.peer
        }
        // The peer already invited us and waits for an answer: inviting it back means yes.
        if let theirs = incoming.values.first(where: { Self.matches(query, $0.link.peer) }),
           let peer = await acceptPendingInvitation(from: theirs.link.peer.id, client: client) {
            return peer
        }
        let deadline = ContinuousClock.now + .seconds(timeout)
        let target = try await resolve(query, until: deadline, timeout: timeout)
        if target.expected == nil, let link = sessions.values.first(where: { $0.peer.address == target.address }) {
            client?.emit(connectedEvent(link))
            return link.peer
        }
        // Its invitation may have arrived while we were looking for it.
        if let expected = target.expected, let peer = await acceptPendingInvitation(from: expected, client: client) {
            return peer
        }
        if let expected = target.expected, let link = sessions[expected] {
            client?.emit(connectedEvent(link))
            return link.peer
        }
        let invitation = OutgoingInvitation(id: Self.newInvitationID(), context: context, timeout: timeout)
        if let expected = target.expected { outgoing[expected] = invitation }
        sink.emit(Events.Connecting(peer: target.expected.map { PeerRef(id: $0.rawValue, name: target.name) }, address: target.address))
        let negotiated: Negotiated
        do {
            negotiated = try await Connections.connect(host: target.host, port: target.port, preference: configuration.encryption, tls: tls.client)
        } catch {
            if let expected = target.expected { outgoing[expected] = nil }
            throw .connectionFailed("cannot connect to \(target.address): \(Self.describe(error))")
        }
        if case let .refused(_, theirs, decision) = negotiated {
            if let expected = target.expected { outgoing[expected] = nil }
            throw Self.mismatch(ours: configuration.encryption, theirs: theirs, decision: decision)
        }
        if case let .foreign(_, what) = negotiated {
            if let expected = target.expected { outgoing[expected] = nil }
            throw .connectionFailed("\(target.address) is not a nearby node (\(what))")
        }
        let connection = Task { await self.serve(negotiated, isClient: true, expected: target.expected, invitation: invitation, sink: sink) }
        tasks.append(connection)
        let timer = Task {
            try? await Task.sleep(until: deadline)
            if !Task.isCancelled { await self.timeOut(invitation, query: query, timeout: timeout) }
        }
        // The invite frame goes out once the handshake is done (`attach`); then the answer decides.
        let outcome = await invitation.wait()
        timer.cancel()
        outgoing = outgoing.filter { $0.value !== invitation }
        switch outcome {
        case let .connected(peer):
            if let client, let link = sessions[peer.id] { client.emit(connectedEvent(link)) }
            return peer
        case let .declined(reason):
            sink.emit(Events.Declined(invitation: invitation.id, peer: PeerRef(id: invitation.link?.peer.id.rawValue ?? query, name: invitation.link?.peer.name), reason: reason))
            throw .declined(peer: invitation.link?.peer.id.rawValue ?? query, reason: reason)
        case let .failed(error): throw error
        }
    }

    private func timeOut(_ invitation: OutgoingInvitation, query: String, timeout: Double) async {
        guard invitation.isWaiting else { return }
        // Resolve first: closing the link below would otherwise report a lost connection instead.
        invitation.resolve(.failed(.invitationTimedOut(peer: invitation.link?.peer.id.rawValue ?? query, seconds: timeout)))
        outgoing = outgoing.filter { $0.value !== invitation }
        if let link = invitation.link {
            await leave(link, because: "invitation timed out", telling: "invitation timed out")
        }
    }

    /// Sends a message to peers, inviting those not connected yet.
    public func send(_ payload: [UInt8], to queries: [String], all: Bool, timeout: Double, client: (any EventSink)?) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        guard payload.count <= Frame.maxPayload else { throw .messageTooLarge(bytes: payload.count, limit: Frame.maxPayload) }
        var targets: [Link] = []
        if all {
            targets = Array(sessions.values)
            guard !targets.isEmpty else { throw .notConnected("any peer (no sessions)") }
        }
        for query in queries {
            let peer = try await invite(query, context: nil, timeout: timeout, client: client)
            guard let link = sessions[peer.id] else { throw .notConnected(peer.id.rawValue) }
            targets.append(link)
        }
        for link in targets {
            await link.send(Frame(kind: .message, payload: ByteBuffer(bytes: payload)))
        }
        sink.emit(Events.Sent(peers: targets.map(\.peer.ref), bytes: payload.count))
    }

    /// Leaves sessions; the peers see `disconnected` with our reason.
    public func disconnect(_ query: String?, all: Bool, client: (any EventSink)?) async throws(NearbyError) -> [PeerRef] {
        let targets: [Link]
        if all {
            targets = Array(sessions.values)
        } else if let query {
            let matching = sessions.values.filter { Self.matches(query, $0.peer) }
            guard !matching.isEmpty else { throw .notConnected(query) }
            guard matching.count == 1 else {
                throw .peerAmbiguous(query, candidates: matching.map { "\($0.peer.id) (\($0.peer.name))" }.sorted())
            }
            targets = matching
        } else {
            targets = []
        }
        for link in targets {
            await leave(link, because: "we left: disconnected by us", telling: "disconnected")
        }
        for _ in 0..<40 where targets.contains(where: { links[$0] != nil }) { try? await Task.sleep(for: .milliseconds(25)) }
        let left = targets.map(\.peer.ref)
        if let client {
            for peer in left { client.emit(Events.Disconnected(peer: peer, reason: "we left: disconnected by us", peers: sessions.count)) }
        }
        return left
    }

    // MARK: Peers by name

    struct Target {
        var host: String
        var port: Int
        var expected: PeerID?
        var name: String?
        var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// `HOST:PORT` skips discovery (the identity is still checked in the handshake); anything else
    /// is looked up among discovered peers by ID, unambiguous ID prefix, or display name.
    func resolve(_ query: String, until deadline: ContinuousClock.Instant, timeout: Double) async throws(NearbyError) -> Target {
        if let direct = Self.parseHostPort(query) { return Target(host: direct.host, port: direct.port) }
        startDiscovery()
        var settledAt: ContinuousClock.Instant?
        while true {
            let candidates = discovered.values.filter { Self.matches(query, $0) && $0.instance != identity.peerID.rawValue }
            if let exact = candidates.first(where: { $0.instance == query }) { return try target(for: exact) }
            if candidates.count > 1 {
                throw .peerAmbiguous(query, candidates: candidates.map { "\($0.instance) (\($0.txt.displayName ?? "?"))" }.sorted())
            }
            if let only = candidates.first {
                // A name another peer shares may show up a moment later: look once more before choosing.
                if let settledAt, ContinuousClock.now >= settledAt { return try target(for: only) }
                if settledAt == nil { settledAt = ContinuousClock.now + .milliseconds(300) }
            }
            guard ContinuousClock.now < deadline else { throw .peerNotFound(query, waitedSeconds: timeout) }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func target(for peer: DiscoveredPeer) throws(NearbyError) -> Target {
        guard peer.kind == .nearby else { throw .notANearbyPeer("\(peer.instance) (\(peer.txt.displayName ?? "?"))") }
        guard let port = peer.port else { throw .connectionFailed("\(peer.instance) has no port") }
        let ordered = peer.addresses.filter { !$0.contains(":") } + peer.addresses.filter { $0.contains(":") && !$0.hasPrefix("fe80") }
            + peer.addresses.filter { $0.hasPrefix("fe80") }
        guard let host = ordered.first ?? peer.host else { throw .connectionFailed("\(peer.instance) has no address") }
        return Target(host: host, port: port, expected: PeerID(peer.instance), name: peer.txt.displayName)
    }

    private func startDiscovery() {
        guard browser == nil else { return }
        let browser = Browser(service: configuration.service)
        self.browser = browser
        guard let updates = try? browser.start() else { return }
        tasks.append(Task {
            for await update in updates { self.discovery(update) }
        })
    }

    private func discovery(_ update: Browser.Update) {
        switch update {
        case let .found(peer), let .updated(peer, _): discovered[peer.instance] = peer
        case let .lost(peer): discovered[peer.instance] = nil
        case .failed: break
        }
    }

    static func matches(_ query: String, _ peer: AuthenticatedPeer) -> Bool {
        !query.isEmpty && (peer.id.rawValue.hasPrefix(query) || peer.name == query)
    }

    static func matches(_ query: String, _ peer: DiscoveredPeer) -> Bool { peer.matches(query) }

    static func parseHostPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }

    static func newInvitationID() -> String {
        String((0..<10).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement() ?? "0" })
    }
}

/// Sends every event to two sinks: the node's own output and the client that asked for the work.
public struct TeeSink: EventSink {
    let first: any EventSink
    let second: any EventSink
    public init(_ first: any EventSink, _ second: any EventSink) {
        self.first = first
        self.second = second
    }
    public func emit(_ body: some EventBody) {
        first.emit(body)
        second.emit(body)
    }
    public func emitLine(_ line: String) {
        first.emitLine(line)
        second.emitLine(line)
    }
}

/// Discards events.
public struct NullSink: EventSink {
    public init() {}
    public func emit(_ body: some EventBody) {}
    public func emitLine(_ line: String) {}
}
