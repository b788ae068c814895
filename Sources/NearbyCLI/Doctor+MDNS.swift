import Foundation
import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

/// `nearby doctor PEER`'s checks after the lookup: `subnet` for `HOST:PORT` (or a last-known
/// address), PEER's responder asked directly (`multicast-path`, `ghost`), then the connection checks
/// against the address given, the peer found, or its last-known address.
extension Nearby.Doctor {
    /// What PEER's checks learnt that `conflicts` (said before them) needs.
    final class PeerEvidence: Sendable {
        struct Found: Sendable {
            var instance: String?
            var host: String?
            var others: [MDNSQuestion.Answer] = []
        }
        let found = Locked(Found())
    }

    func peerChecks(
        _ peerCheck: PeerCheck?, interfaces: [NetworkInterface], identity: Identity, paths: NearbyPaths, environment: [String: String],
        service: ServiceType, survey: Survey, probe: String?, evidence: PeerEvidence, started: Date,
        until deadline: ContinuousClock.Instant, record: (DoctorCheck) -> Void
    ) async {
        guard let peer else { return }
        var target: Target
        // What another check found that keeps multicast from passing (another subnet).
        var explained: String?
        var subnetCheck: DoctorCheck?
        // Listed by this host's daemon (found by name): the one a ghost can be.
        var listed: DiscoveredPeer?
        // Not found by name, but a node answers at its last-known address: said once PEER's
        // responder was asked, in words that do not claim the peer is absent when it is there.
        var notFound: DoctorCheck?
        func subnet(_ host: String, _ port: Int) {
            guard let subnet = Subnets.check(host: host, port: port, interfaces: interfaces) else { return }
            subnetCheck = subnet
            if subnet.status == .warn { explained = "the subnet check found \(host) on another subnet, and mDNS does not cross routers" }
        }
        if let direct = Node.parseHostPort(peer) {
            subnet(direct.host, direct.port)
            target = Target(addresses: [direct.host], port: direct.port, expected: nil, name: peer)
        } else {
            guard let peerCheck else { return }
            if let last = peerCheck.lastKnown {
                notFound = peerCheck.check
                if let host = last.addresses.first { subnet(host, last.port) }
                target = last
            } else {
                record(peerCheck.check)
                guard let found = peerCheck.found, let port = found.port else { return }
                listed = found
                // IPv4 first, link-local IPv6 last: the address a hint names is the one to type.
                let ordered = PeerAddresses.connectionOrder(found.addresses)
                target = Target(
                    addresses: ordered.isEmpty ? [found.host].compactMap { $0 } : ordered, port: port,
                    expected: PeerID(found.claimedID), name: found.txt.displayName ?? found.claimedID)
            }
        }
        let instance = listed?.instance ?? target.expected?.rawValue
        let asked = await Self.askResponder(
            target, route: MDNSQuestion.route(target.addresses, interfaces: interfaces),
            // Its other addresses on this host's subnets are asked too: the daemon's cache may hold
            // one the host gave up (a lease renewed, an address taken off), first in the list.
            also: target.addresses.filter { MDNSQuestion.route([$0], interfaces: interfaces)?.via != nil }, instance: instance, listed: listed,
            service: service, survey: survey, environment: environment, until: deadline)
        var ghost: DoctorCheck?
        if let listed, let asked {
            let lastHeard = RecentPeers(paths: paths).load().first { $0.id == listed.claimedID && $0.service == service.name }?.lastSeen
            ghost = DoctorCheck.ghost(
                listed: true, peer: target.name, address: asked.address, port: target.port, outcome: asked.outcome,
                connected: asked.connected, connectReason: asked.connectReason, lastHeard: lastHeard, since: started)
        }
        let isGhost = ghost?.status == .fail
        let path: DoctorCheck
        if let asked {
            path = DoctorCheck.multicastPath(
                asked.outcome, peer: target.name, address: asked.address, registrationType: service.registrationType, daemonSees: asked.daemonSees,
                explained: explained ?? (isGhost ? "\(target.name) answers nothing at all (see ghost)" : nil), byAddress: target.address(asked.address))
            evidence.found.withLock { $0 = PeerEvidence.Found(instance: instance, host: listed?.host ?? asked.outcome.unicast?.instanceHost, others: asked.outcome.others) }
        } else {
            path = DoctorCheck("multicast-path", .skip, "not asked: no address of \(target.name) is known that can be asked (an IPv4 address, a link-local IPv6 address with its interface, or an IPv6 address on a subnet of this host)")
        }
        // PEER's responder lists it when asked directly: it is there, its multicast is not.
        let there = asked.map { answer in instance.map { answer.outcome.unicast?.instances.contains($0) == true } ?? false
            || answer.outcome.unicast?.instanceHost != nil } ?? false
        if var notFound {
            if path.status == .fail, there, let address = asked?.address {
                notFound.detail = "\(target.name) (\(instance ?? "?")) is advertised — its responder at \(address) lists it when asked directly — "
                    + "but its announcements do not reach this host by multicast: see multicast-path"
                notFound.hint = "fix the multicast path (see multicast-path); meanwhile reach it by address: '\(Spelling.command(.invite, target.address(address)))'"
            }
            record(notFound)
        }
        if let subnetCheck { record(subnetCheck) }
        record(path)
        if let ghost { record(ghost) }
        let filtered = path.status == .fail && asked?.outcome.unicast != nil
        await Self.connectChecks(
            target, identity: identity, preference: session.mode, knownPeers: KnownPeers(paths: paths),
            probe: probe, until: deadline,
            explained: explained ?? (filtered ? "multicast-path found multicast filtered between the two hosts" : nil),
            skipped: isGhost ? "\(target.name) is a ghost (see ghost): nothing takes a connection there" : nil,
            advertised: listed != nil ? interfaces : nil, record: record)
    }

    /// What asking PEER's responder showed, with whether this host's daemon sees what it named and
    /// (for a listed peer) whether anything takes a TCP connection there.
    struct Asked: Sendable {
        var address: String
        var outcome: MDNSQuestion.Outcome
        var daemonSees: Bool?
        var connected: Bool
        var connectReason: String?
    }

    /// Asks PEER's responder (`NEARBY_MDNS_QUESTION_TIMEOUT`, default 1 s, at most a third of what
    /// is left before `deadline`); for a listed peer that answers nothing, tries a TCP connection.
    /// nil when no IPv4 address is known.
    static func askResponder(
        _ target: Target, route: (address: String, via: String?)?, also: [String] = [], instance: String?, listed: DiscoveredPeer?,
        service: ServiceType,
        survey: Survey, environment: [String: String], until deadline: ContinuousClock.Instant
    ) async -> Asked? {
        guard let route else { return nil }
        let full = MDNSQuestion.wait(environment: environment)
        // A third of what is left at most: the connection checks that follow need the rest.
        let wait = min(full, max(.zero, deadline - .now) / 3)
        let started = ContinuousClock.now
        var outcome = await MDNSQuestion.ask(
            address: route.address, also: also, via: route.via, registrationType: service.registrationType, instance: instance, wait: wait)
        outcome.cut = wait < full && (outcome.unicast == nil || (outcome.multicastSent && outcome.multicast == nil))
        // Whether this host's daemon sees any instance PEER's responder named: the peer found, what
        // the survey holds, else a browse until the question's wait ends.
        var daemonSees: Bool?
        if let named = outcome.unicast?.instances, !named.isEmpty {
            let wanted = Set(named)
            if let listed, wanted.contains(listed.instance) {
                daemonSees = true
            } else if survey.all.contains(where: { $0.type == service.registrationType && wanted.contains($0.peer.instance) }) {
                daemonSees = true
            } else {
                let browser = Browser(service: service)
                if let updates = try? await browser.start() {
                    let seen = await firstResult(until: min(started + full, deadline)) { () -> Bool? in
                        for await update in updates { if case let .found(peer) = update, wanted.contains(peer.instance) { return true } }
                        return nil
                    }
                    browser.stop()
                    daemonSees = seen ?? false
                }
            }
        }
        // A listed peer whose responder answers nothing: does anything take a connection there?
        let silent = listed != nil && outcome.unicast == nil && outcome.multicast == nil && outcome.failure == nil && !outcome.cut
        let (connected, reason) = silent ? await Self.anyConnects(target, within: min(.seconds(2), max(.milliseconds(1), deadline - .now))) : (false, nil)
        return Asked(address: outcome.answeredAt ?? route.address, outcome: outcome, daemonSees: daemonSees, connected: connected, connectReason: reason)
    }

    /// Whether any of the target's first two addresses takes a TCP connection (the reason of the
    /// last that did not).
    static func anyConnects(_ target: Target, within limit: Duration) async -> (Bool, String?) {
        var reason: String?
        for address in target.addresses.prefix(2) {
            guard let unreachable = await Connections.reachable(host: address, port: target.port, timeout: limit) else { return (true, nil) }
            reason = "\(address): \(unreachable.reason)"
        }
        return (false, reason)
    }
}
