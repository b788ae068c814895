import Foundation
import NIOCore
import NIOSSL

/// The node: this identity's presence for one service type. It keeps only what spans links —
/// sessions by peer, `Invitations` (both ways, and the waiting `accept`s), `DiscoveryCache`, stream
/// listeners, policy — and hears from each `Link` that it connected and that it closed. A link owns
/// the rest (its `SessionStateMachine`, its channels and the files and streams on them), fed by its
/// own task. Every connection, timer and browser task is a child of `run()`, so stopping the node
/// ends them.
public actor Node {
    public nonisolated let identity: Identity
    public nonisolated let configuration: NodeConfiguration
    public nonisolated let events: any EventSink
    let knownPeers: KnownPeers
    let tls: SessionTLS.Contexts
    /// Unreliable messages (Node+Lines.swift).
    let datagrams: DatagramHub

    private var advertiser: Advertiser?
    /// `--domain`: the registration in each unicast DNS domain, besides `advertiser` on the link.
    private var registrars: [WideAreaRegistrar] = []
    private var listener: (any Channel)?
    public private(set) var port = 0
    var discovery = DiscoveryCache()
    /// Lookups (`resolve`) waiting for discovery to change.
    var discoveryWaiters: [OneShot<Void>] = []
    var invitations = Invitations()

    /// Every authenticated connection (each owns its state), for goodbyes when the node stops.
    var links: Set<Link> = []
    var sessions: [PeerID: Link] = [:]
    private var sessionWatchers: [UUID: AsyncStream<SessionChange>.Continuation] = [:]
    private(set) var stopping = false
    /// Incoming streams waiting for a listener, and listeners waiting for one.
    var streamWaits = StreamWaits()
    /// The partial files being written, over every link, and the quota on strangers' partials.
    nonisolated let partials: PartialFiles
    /// Where peers were reached lately (nil with `NEARBY_REMEMBER=0`): tried before discovery answers.
    let recent: RecentPeers?

    /// Work for `run()` to own: connections, timers, the browser's updates.
    private nonisolated let jobs: AsyncStream<@Sendable () async -> Void>
    private nonisolated let jobQueue: AsyncStream<@Sendable () async -> Void>.Continuation

    public enum SessionChange: Sendable {
        case connected(PeerID)
        case disconnected(PeerID, remaining: Int)
    }

    public init(identity: Identity, configuration: NodeConfiguration, paths: NearbyPaths, events: any EventSink) throws(NearbyError) {
        self.identity = identity
        self.configuration = configuration
        self.events = events
        self.knownPeers = KnownPeers(paths: paths, autoCap: configuration.autoPinCap)
        self.recent = RecentPeers.remembersAddresses() ? RecentPeers(paths: paths) : nil
        (jobs, jobQueue) = AsyncStream.makeStream()
        self.datagrams = DatagramHub(events: events)
        partials = PartialFiles(limits: configuration.partialQuota, record: paths.strangersDirectories(service: configuration.service.name))
        do {
            tls = try SessionTLS.contexts(for: identity)
        } catch {
            throw .connectionFailed("cannot set up TLS: \(error)")
        }
    }

    var displayName: String { configuration.displayName ?? identity.displayName }

    /// The `advertising` event: who this node is, on which service and port, with what info — in
    /// its first place (`local.` unless `--no-link`).
    public var advertisingEvent: Events.Advertising { advertisingEvents[0] }

    /// One `advertising` event per place the node is in: the link, then each domain.
    public var advertisingEvents: [Events.Advertising] {
        configuration.domains.map {
            Events.Advertising(
                peer: PeerRef(id: identity.peerID.rawValue, name: displayName), service: configuration.service.name,
                domain: $0, port: port, info: configuration.info)
        }
    }
    public var sessionCount: Int { sessions.count }
    public var connectedPeers: [AuthenticatedPeer] { sessions.values.map(\.peer).sorted { $0.id < $1.id } }

    // MARK: Lifetime

    /// Runs the node's work until cancelled: every connection, timer and browser task is a child of
    /// this call, so cancelling it ends them all.
    public nonisolated func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask { await job() }
            }
        }
    }

    /// Hands work to `run()`.
    nonisolated func spawn(_ job: @escaping @Sendable () async -> Void) {
        jobQueue.yield(job)
    }

    /// Opens the listening socket and, when configured, advertises.
    public func start() async throws(NearbyError) {
        let listener = try await Connections.listen(port: configuration.port, preference: configuration.encryption, tls: tls.server) { [self] negotiated in
            spawn { await self.serve(negotiated, isClient: false, expected: nil, invitation: nil, sink: self.events) }
        }
        self.listener = listener
        port = listener.localAddress?.port ?? 0
        NearbyLog.logger.info("listening for sessions on port \(port) (encryption \(configuration.encryption.rawValue))")
        if let root = configuration.saveDirectory { spawn { [partials] in await partials.sweepUntilCancelled(adopting: root) } }
        guard configuration.advertise else { return }
        let txt = TXTRecord(displayName: displayName, info: configuration.info, protocolVersion: TXTRecord.protocolVersion)
        // Each domain, then the link; a place that refuses undoes the others and fails the start.
        do throws(NearbyError) {
            for wideArea in configuration.wideAreas {
                let registrar = try WideAreaRegistrar(
                    settings: wideArea, service: configuration.service, instance: identity.peerID.rawValue, port: UInt16(port), txt: txt)
                try await registrar.start()
                registrars.append(registrar)
            }
            guard configuration.link || configuration.wideAreas.isEmpty else { return }
            let advertiser = Advertiser(service: configuration.service, instance: identity.peerID.rawValue, port: UInt16(port), txt: txt)
            try await advertiser.start(lost: advertisementLost)
            self.advertiser = advertiser
        } catch {
            for registrar in registrars { await registrar.stop() }
            registrars = []
            throw error
        }
    }

    /// The daemon went away under our advertisement (stopped, restarted): say so, and register
    /// again as soon as it answers, printing `advertising` again.
    private nonisolated var advertisementLost: @Sendable () -> Void {
        { [self] in spawn { await self.readvertise() } }
    }

    private func readvertise() async {
        guard let advertiser, !stopping else { return }
        // Not a failure of the node, which runs on: a wait, with no exit status.
        events.emit(Events.Waiting(
            for: "daemon", service: configuration.service.name,
            reason: "the DNS-SD daemon went away: not discoverable until it is back, then advertising again"))
        NearbyLog.logger.warning("the DNS-SD daemon went away; registering again as soon as it is back")
        while !stopping {
            do {
                try await Task.sleep(for: .milliseconds(500))
            } catch {
                return
            }
            do {
                try await advertiser.start(lost: advertisementLost)
                if stopping { return await advertiser.stop() }
                events.emit(advertisingEvent)
                return
            } catch {
                continue
            }
        }
    }

    /// Says goodbye to every peer, withdraws the advertisement, closes everything. Bounded: a peer
    /// that does not read its goodbye holds nobody up for more than half a second.
    public func stop(reason: String = "the node stopped") async {
        guard !stopping else { return }
        stopping = true
        await advertiser?.stop()
        for registrar in registrars { await registrar.stop() }
        discovery.stop()
        invitations.endWaiters()
        endStreamListeners()
        await withTaskGroup(of: Void.self) { group in
            for link in links {
                group.addTask { await self.leave(link, because: "we left: \(reason)", telling: reason) }
            }
        }
        // Give the peers a moment to close their side, and the links to report `disconnected`.
        await Link.untilDetached(Array(links), by: .now + .milliseconds(500))
        try? await listener?.close()
        for link in links { link.close(because: "the node stopped") }
        jobQueue.finish()
        datagrams.close()
    }

    /// Session changes, for commands that stay "until the peer leaves".
    public func sessionChanges() -> AsyncStream<SessionChange> {
        let (stream, continuation) = AsyncStream<SessionChange>.makeStream()
        sessionWatchers[UUID()] = continuation
        return stream
    }

    func notify(_ change: SessionChange) {
        for (id, continuation) in sessionWatchers {
            if case .terminated = continuation.yield(change) { sessionWatchers[id] = nil }
        }
    }

    // MARK: Connections

    /// Runs one connection from preamble to close.
    nonisolated func serve(
        _ negotiated: Negotiated, isClient: Bool, expected: PeerID?, invitation: Invitations.Outgoing?, sink: any EventSink
    ) async {
        let connection: FrameChannel
        switch negotiated {
        case let .silent(remote):
            NearbyLog.logger.debug("\(remote) connected and closed without a word (a reachability check or a scan)")
            return
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
                let established = Link(
                    peer: peer, isClient: isClient, outbound: outbound, transport: connection.channel.channel,
                    shortcut: connection.shortcut, admission: connection.admission)
                link = established
                await attach(established, invitation: invitation, sink: sink)
                await established.run(&iterator, owner: self)
            }
        } catch {
            let why = Task.isCancelled ? "the node stopped" : Link.describe(error)
            if let link {
                link.setReason(why)
            } else {
                let nearbyError = (error as? NearbyError) ?? .connectionFailed("handshake with \(connection.remote) failed: \(why)")
                events.emit(Events.Rejected(address: connection.remote, reason: nearbyError.errorDescription ?? why, code: nearbyError.code))
                reportRefusal(nearbyError)
                invitation?.outcome.settle(.failed(nearbyError))
            }
        }
        if let link { await detach(link) }
    }

    private func attach(_ link: Link, invitation: Invitations.Outgoing?, sink: any EventSink) async {
        NearbyLog.logger.info("\(link.peer.id) (\(link.peer.name)) proved its identity at \(link.peer.address); \(link.peer.encrypted ? "TLS 1.3" : "plaintext"), code \(link.peer.verificationCode)")
        links.insert(link)
        guard let invitation else { return armInvitationDeadline(link) }
        if let existing = sessions[link.peer.id] {
            // Already in session with whoever this turned out to be (HOST:PORT, or crossed
            // invitations that settled the other way): use that session, drop this connection.
            invitation.outcome.settle(.connected(existing.peer))
            await leave(link, because: "not needed: already in session", telling: "already in session")
            return
        }
        guard invitation.isWaiting else {
            await leave(link, because: "not needed: the invitation was settled", telling: "already in session")
            return
        }
        invitation.link = link
        if invitations.outgoing[link.peer.id] == nil { invitations.outgoing[link.peer.id] = invitation }
        sink.emit(Events.Invited(
            invitation: invitation.id, peer: link.peer.ref, address: link.peer.address,
            verificationCode: link.peer.verificationCode, encrypted: link.peer.encrypted))
        let actions = link.step { $0.invite(id: invitation.id, context: invitation.context, timeout: invitation.timeout) }
        await link.perform(actions, owner: self)
    }

    private func detach(_ link: Link) {
        NearbyLog.logger.info("connection with \(link.peer.id) closed: \(link.closeReason ?? "connection lost")")
        links.remove(link)
        defer { link.markDetached() }
        link.shortcut.disarm()
        datagrams.remove(link)
        streamWaits.pending.removeAll { $0.link === link }
        let reason = link.closeReason ?? "connection lost"
        if sessions[link.peer.id] === link {
            sessions[link.peer.id] = nil
            events.emit(Events.Disconnected(peer: link.peer.ref, reason: reason, peers: sessions.count))
            notify(.disconnected(link.peer.id, remaining: sessions.count))
        }
        for invitation in invitations.withdraw(on: link) {
            events.emit(Events.Declined(invitation: invitation.id, peer: link.peer.ref, reason: "withdrawn: \(reason)"))
        }
        if let pending = invitations.outgoing[link.peer.id], pending.link === link, pending.isWaiting {
            invitations.outgoing[link.peer.id] = nil
            pending.outcome.settle(.failed(.connectionFailed("\(link.peer.id) closed the connection before answering: \(reason)")))
        }
    }

    func connect(_ link: Link) {
        guard pinSession(link) else { return }
        // A session now: no longer one of the links a stranger may hold open (HandshakeGate).
        link.admission?.release()
        if let previous = sessions[link.peer.id], previous !== link {
            sessions[link.peer.id] = nil
            previous.close(because: "replaced by a new connection")
        }
        sessions[link.peer.id] = link
        events.emit(connectedEvent(link))
        let events = self.events, peer = link.peer.ref
        link.shortcut.arm { bytes in
            link.heard()
            events.emit(Events.Message(bytes, from: peer))
        }
        notify(.connected(link.peer.id))
        if let pending = invitations.outgoing.removeValue(forKey: link.peer.id) { pending.outcome.settle(.connected(link.peer)) }
    }

    func connectedEvent(_ link: Link) -> Events.Connected {
        Events.Connected(
            peer: link.peer.ref, address: link.peer.address, verificationCode: link.peer.verificationCode,
            encrypted: link.peer.encrypted, peers: sessions.count)
    }
}
