import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

/// Finds a peer and reaches it: the lookup among what discovery found (`resolve`), the remembered
/// addresses tried while discovery runs (Dialer+Remembered.swift), and the connection address by
/// address, once more when a restarted peer shows up elsewhere (`connect`, `fresher`). An actor of
/// its own: it owns the node's discovery cache and the lookups waiting on it, so a lookup never
/// holds the node. The node decides what to do with the connection it returns (`Link.run`).
actor Dialer {
    let configuration: NodeConfiguration
    /// This node's ID: never a candidate for itself.
    let me: PeerID
    let tls: NIOSSLContext
    /// Where peers were reached lately (nil with `NEARBY_REMEMBER=0`): tried before discovery answers.
    let recent: RecentPeers?
    /// Runs work as a child of the node (the browser's updates).
    let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void
    var discovery = DiscoveryCache()
    /// Lookups (`resolve`) waiting for discovery to change.
    var discoveryWaiters: [OneShot<Void>] = []

    init(
        configuration: NodeConfiguration, me: PeerID, tls: NIOSSLContext, recent: RecentPeers?,
        spawn: @escaping @Sendable (@escaping @Sendable () async -> Void) -> Void
    ) {
        self.configuration = configuration
        self.me = me
        self.tls = tls
        self.recent = recent
        self.spawn = spawn
    }

    /// Whether discovery has seen a peer `query` names.
    func discovers(_ query: String) -> Bool { !discovery.candidates(query, excluding: me).isEmpty }

    /// Stops browsing; lookups still waiting end at their next step.
    func stop() { discovery.stop() }

    struct Target {
        var host: String
        var port: Int
        var expected: PeerID?
        var name: String?
        /// The peer's other addresses, tried in turn when `host` cannot be reached (IPv4 first,
        /// then IPv6, link-local last).
        var alternates: [String] = []
        /// The discovered record it came from (`DiscoveredPeer.impostorKey`), if any.
        var record: String?
        var address: String { Self.address(host, port) }
        var hosts: [String] { [host] + alternates }
        static func address(_ host: String, _ port: Int) -> String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// `HOST:PORT` with an IP address skips discovery (the identity is still checked in the
    /// handshake); anything else is looked up among discovered peers by ID, unambiguous ID prefix,
    /// or display name — `db:5432` too: a peer of that name wins over the host `db`, port 5432.
    /// After `lookingAfter` the client hears "still looking"; a lookup that fails says what it saw
    /// instead (`PeerSearchReport`). Ends at once when the discovery daemon is unavailable or the
    /// calling task is cancelled.
    func resolve(
        _ query: String, until deadline: ContinuousClock.Instant, timeout: Double, client: (any EventSink)? = nil
    ) async throws(NearbyError) -> Target {
        let asked = try PeerQuery(query)
        let direct = Self.parseHostPort(query)
        if let direct, Self.isIPAddress(direct.host) { return Target(host: direct.host, port: direct.port) }
        startDiscovery()
        let started = ContinuousClock.now
        let lookingAt = started + Self.lookingAfter
        let searchAt = max(started, min(lookingAt, deadline - .milliseconds(1500)))
        var search: ElsewhereSearch?
        var listener = client
        defer { _ = search?.finish() }
        while true {
            if let failure = discovery.failure { throw failure }
            let candidates = discovery.candidates(query, excluding: me)
            // A name another peer shares may show up a moment later: choose only once browsing has
            // run long enough for every peer to answer.
            let settled = ContinuousClock.now >= discovery.startedAt + DiscoveryCache.ambiguityWindow
            switch asked.choose(candidates) {
            case let .one(peer) where settled || peer.claimedID == query: return try target(for: peer)
            case let .ambiguous(peers): throw asked.ambiguity(peers)
            case .one, .none: break
            }
            if let direct, candidates.isEmpty, settled {
                if await Self.resolvesHost(direct.host) { return Target(host: direct.host, port: direct.port) }
                let waited = Double((ContinuousClock.now - started) / .milliseconds(100)).rounded() / 10
                throw notFound(query, waited: waited, search: search, unresolvedHost: direct.host)
            }
            guard ContinuousClock.now < deadline else { throw notFound(query, waited: timeout, search: search) }
            if search == nil, ContinuousClock.now >= searchAt {
                let elsewhere = ElsewhereSearch(query: query, skipping: configuration.service.registrationType)
                elsewhere.start()
                search = elsewhere
            }
            if ContinuousClock.now >= lookingAt, deadline > lookingAt, let sink = listener {
                sink.emit(lookingEvent(query, started: started, deadline: deadline))
                listener = nil
            }
            // Until discovery changes, the deadline, the next step above, or (one candidate) the
            // end of the ambiguity window.
            let change = OneShot<Void>()
            discoveryWaiters.removeAll { $0.isSettled }
            discoveryWaiters.append(change)
            var settles = candidates.isEmpty && direct == nil ? deadline : min(deadline, discovery.startedAt + DiscoveryCache.ambiguityWindow)
            for step in [searchAt, lookingAt] where step > ContinuousClock.now { settles = min(settles, step) }
            _ = await change.wait(until: settles)
            if Task.isCancelled { throw .cancelled("looking for \(query)") }
        }
    }

    /// How long a lookup runs before the client hears "still looking": 2 s, or
    /// $NEARBY_LOOKING_AFTER_MS (a test knob).
    static var lookingAfter: Duration {
        ProcessInfo.processInfo.environment["NEARBY_LOOKING_AFTER_MS"].flatMap(Int.init).map { .milliseconds(max($0, 1)) } ?? .seconds(2)
    }

    private func notFound(
        _ query: String, waited: Double, search: ElsewhereSearch?, unresolvedHost: String? = nil
    ) -> NearbyError {
        let near = PeerSearchReport.near(query, among: discovery.peers.values, excluding: me.rawValue)
        var seen = PeerSearchReport(service: configuration.service.registrationType, near: near, elsewhere: search?.finish() ?? [])
        seen.unresolvedHost = unresolvedHost
        seen.domains = configuration.domains
        return .peerNotFound(query, waitedSeconds: waited, seen: seen)
    }

    func target(for peer: DiscoveredPeer) throws(NearbyError) -> Target {
        guard peer.kind == .nearby else { throw .notANearbyPeer("\(peer.instance) (\(peer.txt.displayName ?? "?"))") }
        guard let port = peer.port else { throw .connectionFailed("\(peer.instance) has no port") }
        let ordered = PeerAddresses.connectionOrder(peer.addresses)
        guard let host = ordered.first ?? peer.host else { throw .connectionFailed("\(peer.instance) has no address") }
        return Target(
            host: host, port: port, expected: PeerID(peer.claimedID), name: peer.txt.displayName, alternates: Array(ordered.dropFirst()),
            record: peer.impostorKey)
    }

    /// Starts browsing unless it runs already. The daemon is waited for in a task of the dialer's
    /// own, not by the caller: remembered addresses are tried meanwhile, and the lookups waiting
    /// for discovery hear of a failure as of any other change.
    func startDiscovery() {
        guard let browser = discovery.begin(configuration.service, wideAreas: configuration.wideAreas, link: configuration.link) else { return }
        spawn { [self] in
            let updates: AsyncStream<Browser.Update>
            do throws(NearbyError) {
                updates = try await browser.start()
            } catch {
                await discoveryFailed(browser, error)
                return
            }
            for await update in updates { await discovered(update) }
        }
    }

    private func discoveryFailed(_ browser: any PeerBrowsing, _ error: NearbyError) {
        discovery.startFailed(browser, error)
        wakeDiscoveryWaiters()
    }

    private func discovered(_ update: Browser.Update) {
        discovery.apply(update)
        wakeDiscoveryWaiters()
    }

    private func wakeDiscoveryWaiters() {
        let waiters = discoveryWaiters
        discoveryWaiters = []
        for waiter in waiters { waiter.settle(()) }
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    /// Whether the system resolver knows `host` (a name from `NAME:PORT`), asked on NIO's thread
    /// pool: getaddrinfo blocks, and neither the actor nor an event loop may wait on it.
    static func resolvesHost(_ host: String) async -> Bool {
        (try? await Blocking.run { _ in
            var hints = addrinfo()
            var result: UnsafeMutablePointer<addrinfo>?
            defer { if let result { freeaddrinfo(result) } }
            return getaddrinfo(host, nil, &hints, &result) == 0 && result != nil
        }) ?? false
    }

    static func parseHostPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }

    // MARK: Connecting

    /// Connects to the first of the target's addresses that answers, IPv4 then IPv6, each within
    /// the connect timeout and what is left of the command's one deadline (`--timeout`, shared with
    /// the lookup before and the answer after): an address not reached by then is not tried. When none does, the error names the
    /// peer as the user typed it and says, for each address tried, what happened there.
    func connect(
        _ target: Target, query: String, deadline: ContinuousClock.Instant, sink: any EventSink
    ) async throws(NearbyError) -> (Negotiated, Target) {
        do {
            return try await connectOnce(target, query: query, deadline: deadline, sink: sink)
        } catch let failure {
            // Refused at every address of a peer discovery found: its node may have restarted on
            // another port, and discovery not caught up yet. Once, wait (2 s at most) for it to.
            guard failure.refusedEverywhere, let fresher = await fresher(than: target, until: min(deadline, .now + .seconds(2))) else {
                throw failure.error
            }
            do {
                return try await connectOnce(fresher, query: query, deadline: deadline, sink: sink)
            } catch {
                throw error.error
            }
        }
    }

    struct ConnectFailed: Error {
        let error: NearbyError
        let refusedEverywhere: Bool
    }

    /// The same peer at another port or other addresses, once discovery says so; nil by `deadline`.
    func fresher(than target: Target, until deadline: ContinuousClock.Instant) async -> Target? {
        guard let id = target.expected else { return nil }
        return await watchDiscovery(of: id, until: deadline) { peer in
            guard let now = try? self.target(for: peer), now.port != target.port || now.hosts != target.hosts else { return nil }
            return now
        }
    }

    /// What `pick` makes of the record discovery shows for peer `id`, as soon as it makes
    /// something of it (checked again at every change discovery sees); nil by `deadline`.
    func watchDiscovery<T>(of id: PeerID, until deadline: ContinuousClock.Instant, _ pick: (DiscoveredPeer) -> T?) async -> T? {
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if let peer = discovery.candidates(id.rawValue, excluding: me).first(where: { $0.claimedID == id.rawValue }), let made = pick(peer) {
                return made
            }
            let change = OneShot<Void>()
            discoveryWaiters.removeAll { $0.isSettled }
            discoveryWaiters.append(change)
            _ = await change.wait(until: deadline)
        }
        return nil
    }

    func connectOnce(
        _ target: Target, query: String, deadline: ContinuousClock.Instant, sink: any EventSink
    ) async throws(ConnectFailed) -> (Negotiated, Target) {
        var failures: [String] = []
        var refused = true
        for host in target.hosts {
            let address = Target.address(host, target.port)
            let left = deadline - .now
            // The first address gets a moment even when the lookup took nearly all the time.
            guard failures.isEmpty || left > .zero else { break }
            sink.emit(Events.Connecting(peer: target.expected.map { PeerRef(id: $0.rawValue, name: target.name) }, address: address))
            let timeout = min(Connections.connectTimeout, .nanoseconds(max(left.nanoseconds, 200_000_000)))
            do {
                var used = target
                used.host = host
                used.alternates = []
                return (try await Connections.connect(host: host, port: target.port, preference: configuration.encryption, tls: tls, timeout: timeout), used)
            } catch {
                if error is CancellationError || Task.isCancelled {
                    throw ConnectFailed(error: .cancelled("connecting to \(address)"), refusedEverywhere: false)
                }
                refused = refused && ConnectFailure.isRefusal(error)
                let why = ConnectFailure.describe(error, timeout: timeout) ?? Link.describe(error)
                failures.append(target.hosts.count > 1 ? "\(address) \(why)" : why)
            }
        }
        let whom = query == target.address ? query : target.hosts.count > 1 ? "'\(query)'" : "'\(query)' at \(target.address)"
        throw ConnectFailed(
            error: .connectionFailed("cannot connect to \(whom): \(failures.joined(separator: "; "))"), refusedEverywhere: refused && !failures.isEmpty)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
