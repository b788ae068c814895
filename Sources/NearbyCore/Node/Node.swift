import Foundation
import NIOCore
import NIOSSL
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire
import NearbyTransfer

/// The node: this identity's presence for one service type, a coordinator. It wires the owners
/// together: it hears from each `Link` (`LinkOwner`) that it connected, what it was offered and
/// that it closed, and passes that on. A link owns the rest (its `SessionStateMachine`, its
/// channels and the files and streams on them), fed by its own task; the links and the session
/// with each peer are `Sessions`'s, invitations both ways the `InvitationDesk`'s, incoming streams
/// the `StreamMatchmaker`'s, a transfer's outage its `Resumer`'s, finding and reaching peers the
/// `Dialer`'s, being seen `Presence`'s, files offered `FileIntake`'s (docs/architecture.md). Every
/// connection, timer and browser task is a child of `run()` (`JobRunner`), the peer listener's
/// accept loop too, so stopping the node ends them.
package actor Node {
    package nonisolated let identity: Identity
    package nonisolated let configuration: NodeConfiguration
    package nonisolated let events: any EventSink
    let knownPeers: KnownPeers
    let tls: SessionTLS.Contexts
    /// Unreliable messages (Node+Lines.swift).
    let datagrams: DatagramHub

    /// Where the node is seen: DNS-SD on the link, each `--domain`.
    private let presence: Presence
    private var listener: (any Channel)?
    /// Where the listener hands what it accepted to `accept`'s loop.
    private var arrivals: AsyncStream<Negotiated>.Continuation?
    package private(set) var port = 0
    /// Finding peers and connecting to them (discovery, remembered addresses, addresses in turn).
    let dialer: Dialer
    /// Invitations both ways, and the `accept`s waiting for one.
    let invitations: InvitationDesk
    /// Every authenticated connection (each owns its state), and the session with each peer.
    let sessions: Sessions
    /// The timers and dialled connections the owners start, children of `run()`.
    private nonisolated let tasks: NodeTasks

    /// The DNS-SD instance name the link's daemon gave us (another host may have had our ID first).
    private var advertisedAs: String?
    private(set) var stopping = false
    /// Incoming streams waiting for a listener, and listeners waiting for one.
    let streams: StreamMatchmaker
    /// The partial files being written, over every link, and the quota on strangers' partials;
    /// the places of strangers' connections. Both are the node's for every protocol it serves
    /// (a web page beside it too), so a stranger gets no more by using two.
    package nonisolated let partials: PartialFiles
    package nonisolated let admission: Admission
    /// Offers of files and directories, by the node's policy.
    nonisolated let intake: FileIntake

    /// Work for `run()` to own: connections, timers, the browser's updates.
    private nonisolated let jobs = JobRunner()

    package enum SessionChange: Sendable {
        case connected(PeerID)
        case disconnected(PeerID, remaining: Int)
    }

    package init(identity: Identity, configuration: NodeConfiguration, paths: NearbyPaths, events: any EventSink) throws(NearbyError) {
        self.identity = identity
        self.configuration = configuration
        self.events = events
        let knownPeers = KnownPeers(paths: paths, autoCap: configuration.autoPinCap)
        self.knownPeers = knownPeers
        let queue = jobs
        let tasks = NodeTasks(spawn: { queue.spawn($0) })
        self.tasks = tasks
        let sessions = Sessions(events: events, knownPeers: knownPeers, spawn: { queue.spawn($0) })
        self.sessions = sessions
        let streams = StreamMatchmaker(
            listenerWait: configuration.unclaimedStreamWait, service: configuration.service.name, events: events, tasks: tasks)
        self.streams = streams
        self.datagrams = DatagramHub(events: events)
        partials = PartialFiles(limits: configuration.partialQuota, record: paths.strangersDirectories(service: configuration.service.name))
        admission = Admission(limits: configuration.admission)
        do {
            tls = try SessionTLS.contexts(for: identity)
        } catch {
            throw .connectionFailed("cannot set up TLS: \(ErrorWords.describe(error))")
        }
        intake = FileIntake(
            configuration: configuration, events: events, partials: partials, spawn: { queue.spawn($0) },
            violated: { [events] link, what in Node.violated(link, what, events: events) })
        presence = Presence(configuration: configuration, instance: identity.peerID.rawValue, events: events, spawn: { queue.spawn($0) })
        let dialer = Dialer(
            configuration: configuration, me: identity.peerID, tls: tls.client,
            recent: RecentPeers.remembersAddresses() ? RecentPeers(paths: paths) : nil, spawn: { queue.spawn($0) })
        self.dialer = dialer
        invitations = InvitationDesk(
            sessions: sessions, configuration: configuration, me: identity.peerID, events: events, knownPeers: knownPeers,
            dialer: dialer, streams: streams, tasks: tasks)
        tasks.bind(
            due: { [weak self] timer in await self?.due(timer) },
            serve: { [weak self] dialled in
                await self?.serve(dialled.negotiated, isClient: true, expected: dialled.expected, invitation: dialled.invitation, sink: dialled.sink)
            })
    }

    nonisolated var displayName: String { configuration.displayName ?? identity.displayName }

    /// The `advertising` event: who this node is, on which service and port, with what info — in
    /// its first place (`local.` unless `--no-link`).
    package var advertisingEvent: Events.Advertising { advertisingEvents[0] }

    /// One `advertising` event per place the node is in: the link, then each domain.
    package var advertisingEvents: [Events.Advertising] { presence.advertising(name: displayName, port: port, registeredAs: advertisedAs) }
    package var sessionCount: Int { sessions.count }
    package var connectedPeers: [AuthenticatedPeer] { sessions.all.map(\.peer).sorted { $0.id < $1.id } }

    // MARK: Lifetime

    /// Runs the node's work until cancelled: every connection, timer and browser task is a child of
    /// this call, so cancelling it ends them all.
    package nonisolated func run() async { await jobs.run() }

    /// Hands work to `run()`.
    nonisolated func spawn(_ job: @escaping @Sendable () async -> Void) { jobs.spawn(job) }

    /// An owner's timer is due (`NodeTasks.after`): back to the owner that set it.
    private func due(_ timer: NodeTasks.Timer) async {
        switch timer {
        case let .invitationExpires(id): await invitations.expire(id)
        case let .unclaimedStream(key): await streams.expire(key)
        }
    }

    /// Opens the listening socket and, when configured, advertises.
    package func start() async throws(NearbyError) {
        let (connections, arrivals) = AsyncStream<Negotiated>.makeStream()
        let listener = try await Connections.listen(port: configuration.port, preference: configuration.encryption, tls: tls.server, admission: admission) { negotiated in
            arrivals.yield(negotiated)
        }
        self.listener = listener
        self.arrivals = arrivals
        spawn { [self] in await acceptPeers(connections) }
        port = listener.localAddress?.port ?? 0
        NearbyLog.logger.info("listening for sessions on port \(port) (encryption \(configuration.encryption.rawValue))")
        if let root = configuration.saveDirectory { spawn { [partials] in await partials.sweepUntilCancelled(adopting: root) } }
        guard configuration.advertise else { return }
        let txt = TXTRecord(displayName: displayName, info: configuration.info, protocolVersion: TXTRecord.protocolVersion)
        try await presence.start(port: UInt16(port), txt: txt, announcing: advertisingEvent)
        advertisedAs = await presence.registeredName
    }

    /// Says goodbye to every peer, withdraws the advertisement, closes everything. Bounded: a peer
    /// that does not read its goodbye holds nobody up for more than half a second.
    package func stop(reason: String = "the node stopped") async {
        guard !stopping else { return }
        stopping = true
        streams.stopping = true
        await presence.stop()
        await dialer.stop()
        invitations.stop()
        streams.stop()
        await withTaskGroup(of: Void.self) { group in
            for link in sessions.links {
                group.addTask { await self.leave(link, because: .weLeft(reason), telling: reason) }
            }
        }
        // Give the peers a moment to close their side, and the links to report `disconnected`.
        await Link.untilDetached(Array(sessions.links), by: .now + .milliseconds(500))
        try? await listener?.close()
        arrivals?.finish()
        for link in sessions.links { link.close(because: .nodeStopped) }
        jobs.finish()
        datagrams.close()
    }

    /// Session changes, for commands that stay "until the peer leaves".
    package func sessionChanges() -> AsyncStream<SessionChange> { sessions.watch() }

    // MARK: Connections

    /// The peer listener's accept loop, as `ControlServer`'s (and NIO's TCP echo server's): each
    /// connection runs as a child of this loop, itself a child of `run()`; it ends when the listener
    /// closes or the node is cancelled.
    private nonisolated func acceptPeers(_ connections: AsyncStream<Negotiated>) async {
        await withDiscardingTaskGroup { group in
            for await negotiated in connections {
                group.addTask { await self.serve(negotiated, isClient: false, expected: nil, invitation: nil, sink: self.events) }
            }
        }
    }

    /// Runs one connection from preamble to close.
    nonisolated func serve(
        _ negotiated: Negotiated, isClient: Bool, expected: PeerID?, invitation: Invitations.Outgoing?, sink: any EventSink
    ) async {
        guard let connection = negotiated.frames(ours: configuration.encryption, reporting: events) else { return }
        let parties = Link.Parties(identity: identity, displayName: displayName, expected: expected, knownPeers: knownPeers)
        do {
            _ = try await Link.run(connection: connection, isClient: isClient, parties: parties, owner: self) { link in
                await attach(link, invitation: invitation, sink: sink)
            }
        } catch {
            // No link came of it: the handshake failed, or the node stopped first.
            let why = Task.isCancelled ? "the node stopped" : Link.describe(error)
            let nearbyError = (error as? NearbyError) ?? .connectionFailed("handshake with \(connection.remote) failed: \(why)")
            events.emit(Events.Rejected(address: connection.remote, reason: nearbyError.errorDescription ?? why, code: nearbyError.code))
            reportRefusal(nearbyError)
            invitation?.outcome.settle(.failed(nearbyError))
        }
    }

    private func attach(_ link: Link, invitation: Invitations.Outgoing?, sink: any EventSink) async {
        NearbyLog.logger.info("\(link.peer.id) (\(link.peer.name)) proved its identity at \(link.peer.address); \(link.peer.encrypted ? "TLS 1.3" : "plaintext"), code \(link.peer.verificationCode)")
        sessions.attached(link)
        guard let invitation else { return armInvitationDeadline(link) }
        await invitations.attached(link, invitation: invitation, sink: sink)
    }

    /// The link is over: forget it, and say so to whoever waited on it.
    package func detached(_ link: Link) {
        let reason = "\(link.closeReason ?? .lost)"
        NearbyLog.logger.info("connection with \(link.peer.id) closed: \(reason)")
        defer { link.markDetached() }
        link.stopDelivering()
        datagrams.remove(link)
        streams.closed(link)
        sessions.detached(link, reason: reason)
        invitations.closed(link, reason: reason)
    }

    func connect(_ link: Link) {
        guard sessions.began(link) else { return }
        let events = self.events, peer = link.peer.ref
        // A session now: no longer one of the links a stranger may hold open (Admission).
        link.becameSession { bytes in events.emit(Events.Message(bytes, from: peer)) }
        invitations.connected(link.peer)
    }
}
