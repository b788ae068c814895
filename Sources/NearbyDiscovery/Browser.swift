import CDNSSD
import Dispatch
import NearbyBase

/// A peer as discovery reports it.
package struct DiscoveredPeer: Sendable, Equatable {
    package var instance: String
    package var txt: TXTRecord
    package var host: String?
    package var port: Int?
    package var addresses: [String]
    package var interface: String?
    package var elapsed: Duration
    /// The unicast DNS domain it was found in (`--domain`); nil for mDNS (`local.`).
    package var domain: String? = nil

    /// `nearby` with our protocol key, `mpc` with MPC's display name key, else `other`.
    package var kind: PeerKind {
        txt.protocolVersion != nil ? .nearby : txt.displayName != nil ? .mpc : .other
    }
    package var ref: PeerRef { PeerRef(id: claimedID, name: txt.displayName) }
}

/// Browses one service type: `DNSServiceBrowse`, then per instance and interface `DNSServiceResolve`
/// and `DNSServiceQueryRecord` for A and AAAA (Avahi has no `DNSServiceGetAddrInfo`). All state lives
/// on one serial queue; the `PeerTable` decides what each result means.
package final class Browser: @unchecked Sendable {
    package enum Update: Sendable, Equatable {
        case found(DiscoveredPeer)
        case updated(DiscoveredPeer, changed: [String])
        case lost(DiscoveredPeer)
        /// Discovery stopped working (the daemon went away); the stream ends after this.
        case failed(NearbyError)
    }

    private struct Key: Hashable {
        let instance: String
        let interface: UInt32
    }

    /// The DNS-SD type browsed, e.g. `_nearby._tcp` or any other such as `_http._tcp`.
    package let registrationType: String
    package let domain = "local."
    private let queue = DispatchQueue(label: "nearby.browser")
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var table = PeerTable()
    private var browse: DNSServiceOperation?
    private var resolves: [Key: DNSServiceOperation] = [:]
    private var addressQueries: [Key: [DNSServiceOperation]] = [:]
    private var continuation: AsyncStream<Update>.Continuation?
    private var stopped = false

    package convenience init(service: ServiceType) {
        self.init(registrationType: service.registrationType)
    }

    /// Browses any DNS-SD service type (see `DNSSDType.parse`).
    package init(registrationType: String) {
        self.registrationType = registrationType
        started = clock.now
    }

    /// Starts browsing; results arrive on the returned stream until `stop()` or a failure. Waits
    /// for the daemon on the browser's queue, not on the caller's thread: a cancelled caller stops
    /// waiting at once (a hung daemon cannot hold up Ctrl-C) and the browse is stopped.
    package func start() async throws(NearbyError) -> AsyncStream<Update> {
        DNSSD.silenceAvahiWarnings()
        let (stream, continuation) = AsyncStream<Update>.makeStream()
        continuation.onTermination = { [weak self] _ in self?.stop() }
        let registered: Result<Void, NearbyError>? = await queue.outcome { [self] in
            guard !stopped else { return .failure(.cancelled("browsing")) }
            self.continuation = continuation
            return Result { () throws(NearbyError) in
                browse = try DNSSD.browse(
                type: registrationType, domain: nil, queue: queue,
                onFailure: { [weak self] status in self?.fail(status) }
            ) { [weak self] added, interface, status, name in
                guard let self else { return }
                guard status == Int32(kDNSServiceErr_NoError), let name else {
                    fail(status)
                    return
                }
                let now = clock.now - started
                apply(added
                    ? table.serviceAdded(instance: name, interface: interface, at: now)
                    : table.serviceRemoved(instance: name, interface: interface))
                }
            }
        }
        guard let registered else {
            stop()
            throw .cancelled("browsing")
        }
        try registered.get()
        return stream
    }

    /// Stops every query and ends the stream. Safe to call more than once, from anywhere.
    package func stop() {
        queue.async { [self] in
            guard !stopped else { return }
            stopped = true
            browse?.cancel()
            resolves.values.forEach { $0.cancel() }
            addressQueries.values.flatMap { $0 }.forEach { $0.cancel() }
            resolves = [:]
            addressQueries = [:]
            continuation?.finish()
        }
    }

    private func fail(_ status: Int32) {
        guard !stopped else { return }
        for case let .lost(snapshot) in table.removeAll() { continuation?.yield(.lost(peer(snapshot))) }
        continuation?.yield(.failed(DNSServiceOperation.failure(status, "browse")))
        stop()
    }

    private func apply(_ actions: [PeerTable.Action]) {
        guard !stopped else { return }
        for action in actions {
            switch action {
            case let .resolve(instance, interface):
                let key = Key(instance: instance, interface: interface)
                resolves[key] = try? DNSSD.resolve(
                    instance: instance, type: registrationType, domain: domain, interface: interface,
                    queue: queue, onFailure: { _ in }
                ) { [weak self] interface, status, host, port, txt in
                    guard let self, status == Int32(kDNSServiceErr_NoError), let host else { return }
                    apply(table.resolved(instance: instance, interface: interface, host: host, port: Int(port), txt: txt))
                }
            case let .stopResolve(instance, interface):
                resolves.removeValue(forKey: Key(instance: instance, interface: interface))?.cancel()
            case let .queryAddresses(instance, interface, host):
                let key = Key(instance: instance, interface: interface)
                addressQueries[key] = [kDNSServiceType_A, kDNSServiceType_AAAA].compactMap { type in
                    try? DNSSD.queryRecord(
                        name: host, type: UInt16(type), interface: interface, queue: queue, onFailure: { _ in }
                    ) { [weak self] added, interface, status, type, rdata in
                        guard let self, status == Int32(kDNSServiceErr_NoError),
                              let address = DNSSD.address(type: type, rdata: rdata, interface: interface)
                        else { return }
                        apply(table.addressChanged(instance: instance, address: address, added: added))
                    }
                }
            case let .stopAddressQueries(instance, interface):
                addressQueries.removeValue(forKey: Key(instance: instance, interface: interface))?.forEach { $0.cancel() }
            case let .settle(instance, delay):
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay / .nanoseconds(1)))) { [weak self] in
                    guard let self else { return }
                    apply(table.settled(instance: instance))
                }
            case let .found(snapshot):
                continuation?.yield(.found(peer(snapshot)))
            case let .updated(snapshot, changed):
                continuation?.yield(.updated(peer(snapshot), changed: changed))
            case let .lost(snapshot):
                continuation?.yield(.lost(peer(snapshot)))
            }
        }
    }

    private func peer(_ snapshot: PeerTable.Snapshot) -> DiscoveredPeer {
        DiscoveredPeer(
            instance: snapshot.instance, txt: snapshot.txt, host: snapshot.host, port: snapshot.port,
            addresses: snapshot.addresses, interface: snapshot.interfaceIndex.flatMap(DNSSD.interfaceName),
            elapsed: clock.now - started)
    }
}
