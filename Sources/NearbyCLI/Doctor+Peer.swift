import Foundation
import NearbyCore
import Synchronization

/// `nearby doctor PEER`: the checks about one peer.
extension Nearby.Doctor {
    /// What a browse found besides the peer asked for.
    final class Collected: Sendable {
        let names = Mutex<[String]>([])
    }

    struct PeerCheck: Sendable {
        var check: DoctorCheck
        var found: DiscoveredPeer?
    }

    /// Browses the service type until PEER shows up; when it does not, says what did.
    static func findPeer(
        _ query: String, service: ServiceType, selfID: PeerID, paths: NearbyPaths, environment: [String: String], within limit: Duration
    ) async -> PeerCheck {
        let browser = Browser(service: service)
        let updates: AsyncStream<Browser.Update>
        do throws(NearbyError) {
            updates = try browser.start()
        } catch {
            return PeerCheck(check: DoctorCheck("peer", .fail, "could not browse: \(error.errorDescription ?? "\(error)")",
                                                hint: DoctorCheck.daemonHint, exitStatus: error.exitStatus), found: nil)
        }
        defer { browser.stop() }
        let others = Collected()
        let found = await firstResult(within: limit) { () -> DiscoveredPeer? in
            for await update in updates {
                guard case let .found(peer) = update, peer.instance != selfID.rawValue else { continue }
                if peer.matches(query) { return peer }
                others.names.withLock { $0.append("\(peer.txt.displayName ?? "?") (\(peer.instance))") }
            }
            return nil
        }
        if let peer = found {
            let detail = "\(peer.txt.displayName ?? "?") (\(peer.instance)) on \(service.registrationType): host \(peer.host ?? "?"), "
                + "port \(peer.port.map(String.init) ?? "?"), addresses \(peer.addresses.joined(separator: " ")), interface \(peer.interface ?? "?")"
            guard peer.kind == .nearby else {
                return PeerCheck(check: DoctorCheck("peer", .fail, detail + "; a plain MPC app, not a nearby node",
                                                    hint: "nearby can only connect to nearby nodes", exitStatus: .connectionFailed), found: nil)
            }
            return PeerCheck(check: DoctorCheck("peer", .ok, detail), found: peer)
        }
        let seen = others.names.withLock { $0 }
        var detail = "'\(query)' not found on \(service.registrationType) in \(limit)"
        detail += seen.isEmpty ? "; no other peer found on it either" : "; found instead: \(seen.prefix(10).joined(separator: ", "))"
        let recent = RecentPeers(paths: paths).load().first { $0.service == service.name && ($0.id.hasPrefix(query) || $0.name == query) }
        if let recent {
            detail += "; seen before as \(recent.name ?? "?") (\(recent.id)), last on \(ISO8601DateFormatter().string(from: recent.lastSeen))"
        }
        var hint = "on the peer: is 'nearby advertise --service \(service.name)' running? Compare 'nearby browse --types' there and here"
        let offered = await WideAreaDNS.offeredDomains(environment: environment)
        if let domain = offered.first {
            detail += "; this network offers the DNS-SD domain\(offered.count > 1 ? "s" : "") \(offered.joined(separator: ", "))"
            hint += ". If the peer is on another subnet, look there: 'nearby doctor --domain \(domain) \(query)'"
        }
        return PeerCheck(check: DoctorCheck(
            "peer", .fail, detail,
            hint: hint,
            exitStatus: .peerNotFound), found: nil)
    }

    /// A TCP connection to each address, then on the first that answered one connection for the
    /// preamble, the handshake and the probe (never an invitation).
    static func connectChecks(
        _ peer: DiscoveredPeer, port: Int, identity: Identity, preference: EncryptionPreference, knownPeers: KnownPeers,
        probe: String?, replyWithin: Duration, record: (DoctorCheck) -> Void
    ) async {
        let addresses = peer.addresses.isEmpty ? [peer.host].compactMap { $0 } : peer.addresses
        var working: [String] = []
        var failing: [String] = []
        for address in addresses {
            if let reason = await Connections.reachable(host: address, port: port, timeout: .seconds(2)) {
                failing.append("\(address): \(reason)")
            } else {
                working.append(address)
            }
        }
        let detail = (working.map { "\($0) connects" } + failing).joined(separator: "; ")
        let firewall = "a firewall on the peer (or between) drops TCP port \(port): on the peer, 'nft list ruleset' or 'iptables -L -n'"
        guard let reachable = working.first else {
            record(DoctorCheck("connect", .fail, "found, but no TCP connection to port \(port): \(detail)", hint: firewall, exitStatus: .connectionFailed))
            return
        }
        record(failing.isEmpty
            ? DoctorCheck("connect", .ok, detail)
            : DoctorCheck("connect", .warn, detail, hint: "some addresses do not answer (IPv6 only on one side, a wrong interface, or \(firewall))"))
        let tls: SessionTLS.Contexts
        do {
            tls = try SessionTLS.contexts(for: identity)
        } catch {
            record(DoctorCheck("encryption", .fail, "could not set up TLS: \(error)", exitStatus: .failure))
            return
        }
        let name = peer.txt.displayName ?? peer.instance
        let examined = await Connections.examine(
            host: reachable, port: port, preference: preference, tls: tls, identity: identity, expected: PeerID(peer.instance),
            knownPeers: knownPeers, probe: probe, replyWithin: replyWithin)
        record(examined.encryption.ok
            ? DoctorCheck("encryption", .ok, examined.encryption.detail)
            : DoctorCheck("encryption", .fail, examined.encryption.detail,
                          hint: "use --encryption optional on one side, or the same mode on both", exitStatus: .connectionFailed))
        if let check = DoctorCheck.identity(examined.identity, peer: name) { record(check) }
        if let check = DoctorCheck.peerSeesUs(examined.visibility, peer: name, instance: probe) { record(check) }
    }
}
