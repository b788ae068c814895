/// What the browser knows about each advertised instance, as a pure state machine: DNS-SD results go
/// in, actions come out (start or stop a query, announce a peer). No I/O, so it is tested without a
/// daemon.
///
/// Avahi reports one service once per interface *and* per IP family, so adds and removes are counted
/// per interface, and a peer is `found` once and `lost` once, when its last report is withdrawn.
struct PeerTable: Sendable {
    package struct Snapshot: Equatable, Sendable {
        package var instance: String
        package var txt: TXTRecord
        package var host: String?
        package var port: Int?
        package var addresses: [String]
        package var interfaceIndex: UInt32?
        package var firstSeen: Duration
    }

    package enum Action: Equatable, Sendable {
        case resolve(instance: String, interface: UInt32)
        case stopResolve(instance: String, interface: UInt32)
        case queryAddresses(instance: String, interface: UInt32, host: String)
        case stopAddressQueries(instance: String, interface: UInt32)
        /// Call `settled(instance:)` after this long: addresses have had time to arrive.
        case settle(instance: String, after: Duration)
        case found(Snapshot)
        case updated(Snapshot, changed: [String])
        case lost(Snapshot)
    }

    /// How long `found` waits for an address of the other family once the first one arrived (it is
    /// announced at once when both are in), and how long it waits for any address at all after the
    /// service resolved.
    package static let addressSettle = Duration.milliseconds(100)
    package static let addressGiveUp = Duration.milliseconds(1500)

    private struct Peer {
        var reports: [UInt32: Int] = [:]
        var resolvedOn: Set<UInt32> = []
        var txt = TXTRecord(displayName: nil, info: [:], protocolVersion: nil)
        var host: String?
        var port: Int?
        var interfaceIndex: UInt32?
        var addresses: [String] = []
        var announced = false
        var firstSeen: Duration
    }

    private var peers: [String: Peer] = [:]

    package init() {}

    package var count: Int { peers.count }

    package func snapshot(_ instance: String) -> Snapshot? {
        peers[instance].map { Self.snapshot(instance, $0) }
    }

    package mutating func serviceAdded(instance: String, interface: UInt32, at now: Duration) -> [Action] {
        var peer = peers[instance] ?? Peer(firstSeen: now)
        let previous = peer.reports[interface, default: 0]
        peer.reports[interface] = previous + 1
        peers[instance] = peer
        return previous == 0 ? [.resolve(instance: instance, interface: interface)] : []
    }

    package mutating func serviceRemoved(instance: String, interface: UInt32) -> [Action] {
        guard var peer = peers[instance], let reports = peer.reports[interface] else { return [] }
        if reports > 1 {
            peer.reports[interface] = reports - 1
            peers[instance] = peer
            return []
        }
        var actions: [Action] = [
            .stopResolve(instance: instance, interface: interface),
            .stopAddressQueries(instance: instance, interface: interface),
        ]
        peer.reports[interface] = nil
        peer.resolvedOn.remove(interface)
        guard peer.reports.isEmpty else {
            peers[instance] = peer
            return actions
        }
        peers[instance] = nil
        if peer.announced { actions.append(.lost(Self.snapshot(instance, peer))) }
        return actions
    }

    package mutating func resolved(
        instance: String, interface: UInt32, host: String, port: Int, txt: [UInt8]
    ) -> [Action] {
        guard var peer = peers[instance], peer.reports[interface] != nil else { return [] }
        var actions: [Action] = []
        let record = TXTRecord.decode(txt)
        if !peer.resolvedOn.contains(interface) {
            peer.resolvedOn.insert(interface)
            actions.append(.queryAddresses(instance: instance, interface: interface, host: host))
        }
        var changed: [String] = []
        if peer.host == nil {
            peer.host = host
            peer.port = port
            peer.interfaceIndex = interface
            peer.txt = record
            actions.append(.settle(instance: instance, after: Self.addressGiveUp))
        } else {
            if record.displayName != peer.txt.displayName { changed.append("name") }
            if record.info != peer.txt.info || record.protocolVersion != peer.txt.protocolVersion {
                changed.append("info")
            }
            peer.txt = record
            if peer.port != port || peer.host != host, peer.interfaceIndex == interface {
                peer.host = host
                peer.port = port
                changed.append("port")
            }
        }
        peers[instance] = peer
        if peer.announced, !changed.isEmpty {
            actions.append(.updated(Self.snapshot(instance, peer), changed: changed))
        }
        return actions
    }

    package mutating func addressChanged(instance: String, address: String, added: Bool) -> [Action] {
        guard var peer = peers[instance] else { return [] }
        let had = peer.addresses.contains(address)
        if added, !had {
            peer.addresses.append(address)
        } else if !added, had {
            peer.addresses.removeAll { $0 == address }
        } else {
            return []
        }
        peers[instance] = peer
        if peer.announced { return [.updated(Self.snapshot(instance, peer), changed: ["addresses"])] }
        guard added else { return [] }
        // Both families in: nothing more to wait for. One family: give the other a moment.
        let families = Set(peer.addresses.map { $0.contains(":") })
        if families.count == 2 { return settled(instance: instance) }
        return peer.addresses.count == 1 ? [.settle(instance: instance, after: Self.addressSettle)] : []
    }

    /// A settle timer fired: announce the peer if it is still there and not announced yet.
    package mutating func settled(instance: String) -> [Action] {
        guard var peer = peers[instance], !peer.announced, peer.host != nil else { return [] }
        peer.announced = true
        peers[instance] = peer
        return [.found(Self.snapshot(instance, peer))]
    }

    /// The daemon went away: every peer is gone as far as we can tell.
    package mutating func removeAll() -> [Action] {
        let lost = peers.sorted { $0.key < $1.key }.filter { $0.value.announced }.map { Action.lost(Self.snapshot($0.key, $0.value)) }
        peers = [:]
        return lost
    }

    private static func snapshot(_ instance: String, _ peer: Peer) -> Snapshot {
        Snapshot(
            instance: instance, txt: peer.txt, host: peer.host, port: peer.port,
            addresses: peer.addresses, interfaceIndex: peer.interfaceIndex, firstSeen: peer.firstSeen)
    }
}
