import Foundation
import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

/// `nearby doctor PEER`: the checks about one peer.
extension Nearby.Doctor {
    /// What a browse found besides the peer asked for.
    final class Collected: Sendable {
        let names = Locked<[String]>([])
        /// Peers PEER names: the ambiguity rule needs every one seen in its window.
        let matching = SeenPeers()
        /// The found peer's addresses, with those that arrived after it was found.
        let addresses = Locked<[String]>([])
    }

    /// How long a found peer's later addresses are waited for (at least; a name waits the
    /// ambiguity window).
    static let addressGather = Duration.milliseconds(500)

    struct PeerCheck: Sendable {
        var check: DoctorCheck
        var found: DiscoveredPeer?
        /// Not advertised, but a node answers at the peer's last-known address: checked there.
        var lastKnown: Target? = nil
    }

    /// What the connection checks are run against: a peer found by name, or `HOST:PORT` as given.
    struct Target: Sendable {
        var addresses: [String]
        var port: Int
        /// The ID the peer advertised (nil for `HOST:PORT`: whoever answers).
        var expected: PeerID?
        var name: String

        func address(_ host: String) -> String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// `2.5 s`: how long a check looked, in its detail.
    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f s", Double(duration / .milliseconds(1)) / 1000)
    }

    /// `_chat._tcp` → `chat`: the `--service` value of a nearby service type.
    static func serviceName(_ type: String) -> String {
        type.hasPrefix("_") && type.hasSuffix("._tcp") ? String(type.dropFirst().dropLast(5)) : type
    }

    /// Browses the service type until PEER shows up; when it does not, says what did.
    /// `firewall`: this host's rules that drop mDNS — the first cause named when the peer is not
    /// seen, ahead of whatever the daemon's cache still holds.
    /// Nothing to look for (no PEER, or `HOST:PORT`): nil.
    /// Everything it does ends by `deadline`, doctor's one deadline.
    static func findPeer(
        ifNamed query: String?, service: ServiceType, selfID: PeerID, paths: NearbyPaths, environment: [String: String], survey: Survey,
        interfaces: [NetworkInterface], notFoundHints: [String], firewall: [String] = [], until deadline: ContinuousClock.Instant
    ) async -> PeerCheck? {
        guard let query else { return nil }
        return await findPeer(
            query, service: service, selfID: selfID, paths: paths, environment: environment, survey: survey, interfaces: interfaces,
            notFoundHints: notFoundHints, firewall: firewall, until: deadline)
    }

    static func findPeer(
        _ query: String, service: ServiceType, selfID: PeerID, paths: NearbyPaths, environment: [String: String], survey: Survey,
        interfaces: [NetworkInterface] = [], notFoundHints: [String], firewall: [String] = [], until deadline: ContinuousClock.Instant
    ) async -> PeerCheck {
        let quoted = PeerSearchReport.shellQuoted(query)
        let asked = try? PeerQuery(query)
        let started = ContinuousClock.now
        let limit = deadline - started
        // What a peer not found is explained with is looked up beside the browse, not after it:
        // the DNS-SD domains this network offers, and where the peer was last seen.
        async let offering = firstResult(until: deadline) { await WideAreaDNS.offeredDomains(environment: environment, within: min(.milliseconds(1500), limit)) }
        let recent = RecentPeers(paths: paths).load().first { $0.service == service.name && asked?.matches(id: $0.id, name: $0.name) == true }
        // A peer seen before may still have a node at its last-known address, asked by the checks
        // that follow: the browse leaves them half of the time.
        let browseEnds = recent?.port != nil && recent?.addresses?.isEmpty == false ? started + limit / 2 : deadline
        let browser = Browser(service: service)
        let updates: AsyncStream<Browser.Update>
        do throws(NearbyError) {
            updates = try await browser.start()
        } catch {
            return PeerCheck(check: DoctorCheck("peer", .fail, "could not browse: \(error.errorDescription ?? "\(error)")",
                                                hint: DoctorCheck.daemonHint, exitStatus: error.exitStatus), found: nil)
        }
        defer { browser.stop() }
        let others = Collected()
        // The link asked directly, beside the browse: a responder whose multicast never reaches
        // this host's daemon still answers a one-shot question by unicast.
        async let heard = MDNSQuestion.askLink(
            sources: MDNSQuestion.linkSources(interfaces), registrationType: service.registrationType,
            wait: min(MDNSQuestion.wait(environment: environment), limit / 4))
        func browse(until end: ContinuousClock.Instant) async -> DiscoveredPeer? {
            await firstResult(until: end) { () -> DiscoveredPeer? in
                for await update in updates {
                    guard case let .found(peer) = update, peer.instance != selfID.rawValue else { continue }
                    if peer.matches(query) { return peer }
                    others.names.withLock { $0.append("\(peer.txt.displayName ?? "?") (\(peer.instance))") }
                }
                return nil
            }
        }
        // Half the time first; the rest only when the link's answers do not name the peer (when
        // they do, the checks that follow ask it there).
        var found = await browse(until: min(browseEnds, started + limit / 2))
        let answered = found == nil ? Self.answering(query, in: await heard, selfID: selfID) : nil
        if found == nil, answered == nil, ContinuousClock.now < browseEnds { found = await browse(until: browseEnds) }
        let looked = seconds(min(ContinuousClock.now, browseEnds) - started)
        // The rule every command follows (`PeerQuery.choose`): a name or prefix names a peer only
        // once browsing has run long enough for another of that name to answer.
        // A host's addresses may come one by one after its peer is found: avahi keeps only the
        // last of a host's A records sent alone with the cache-flush bit (RFC 6762 §10.2), and a
        // query listing one as known brings back only the other. Every address given in the
        // ambiguity window (or `addressGather` at least) is the peer's.
        if let first = found {
            others.matching.set(first, for: first.instance)
            others.addresses.withLock { $0 = first.addresses }
            let naming = first.instance != query && asked != nil
            let gathered = ContinuousClock.now + addressGather
            _ = await firstResult(until: min(naming ? max(started + PeerQuery.ambiguityWindow, gathered) : gathered, deadline)) { () -> DiscoveredPeer? in
                for await update in updates {
                    switch update {
                    case let .updated(peer, _) where peer.instance == first.instance:
                        others.addresses.withLock { known in known += peer.addresses.filter { !known.contains($0) } }
                    case let .found(peer) where peer.instance != selfID.rawValue && peer.matches(query):
                        others.matching.set(peer, for: peer.instance)
                    default: continue
                    }
                }
                return nil
            }
            found?.addresses = others.addresses.withLock { $0 }
            if naming, let asked, case let .ambiguous(peers) = asked.choose(others.matching.all) {
                let error = asked.ambiguity(peers)
                return PeerCheck(check: DoctorCheck(
                    "peer", .fail, error.errorDescription ?? "'\(query)' names several peers",
                    hint: "name one of them by its ID: " + peers.map(\.instance).sorted()
                        .map { PeerSearchReport(service: service.registrationType).hint(for: $0) }.joined(separator: " or "),
                    exitStatus: error.exitStatus), found: nil)
            }
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
        // This host drops mDNS: the peer may well be there, unseen. Say the rule first; what the
        // daemon's cache still lists elsewhere is no evidence either way.
        if let rule = firewall.first {
            return PeerCheck(check: DoctorCheck(
                "peer", .fail,
                "'\(query)' not seen on \(service.registrationType) in \(looked): this host's firewall drops mDNS ('\(rule)'), "
                    + "so peers' announcements do not reach this host",
                hint: DoctorCheck.multicastHint(firewall: firewall, otherwise: ""), exitStatus: .peerNotFound), found: nil)
        }
        // The same peer on another service type (responders browsed them all meanwhile).
        let elsewhere = survey.all.filter { $0.type != service.registrationType && $0.peer.instance != selfID.rawValue && $0.peer.matches(query) }
        if let other = elsewhere.first {
            let name = serviceName(other.type)
            let types = Set(elsewhere.map(\.type)).sorted().joined(separator: ", ")
            return PeerCheck(check: DoctorCheck(
                "peer", .fail,
                "'\(query)' not found on \(service.registrationType) in \(looked), but \(other.peer.txt.displayName ?? other.peer.instance) "
                    + "(\(other.peer.instance)) is on \(types): add --service \(name)",
                hint: "nearby doctor \(quoted) --service \(name) (every command that names it needs --service \(name))",
                exitStatus: .peerNotFound), found: nil)
        }
        let seen = others.names.withLock { $0 }
        var detail = "'\(query)' not found on \(service.registrationType) in \(looked)"
        detail += seen.isEmpty ? "; no other peer found on it either" : "; found instead: \(seen.prefix(10).joined(separator: ", "))"
        // A unicast DNS-SD domain this network offers: where a peer on another subnet is found.
        let offered = await offering ?? []
        let offeredDetail = offered.isEmpty ? "" : "; this network offers the DNS-SD domain\(offered.count > 1 ? "s" : "") \(offered.joined(separator: ", "))"
        let offeredHint = offered.first.map { ". If the peer is on another subnet, look there: 'nearby doctor --domain \($0) \(quoted)'" } ?? ""
        if let recent {
            detail += "; seen before as \(recent.name ?? "?") (\(recent.id)), last on \(ISO8601DateFormatter().string(from: recent.lastSeen))"
            // Not advertised now, but its node may still run there: its own checks say why.
            if let last = await lastKnown(recent, until: deadline) {
                return PeerCheck(check: DoctorCheck(
                    "peer", .fail, detail + "; not advertised now, but a node answers at its last-known address \(last.address(last.addresses[0]))" + offeredDetail,
                    hint: "the checks below ask that node why it is not advertised" + offeredHint, exitStatus: .peerNotFound), found: nil, lastKnown: last)
            }
        }
        // Not listed by this host's daemon, but its responder answers a question sent by multicast:
        // advertised, and its multicast does not reach this host. The checks below ask it there.
        if let answered {
            let (answer, instance) = answered
            let name = answer.names[instance] ?? instance
            detail += "; this host's daemon does not list it, but a responder at \(answer.source) answers a question sent by multicast "
                + "with \(name) (\(instance)): advertised, its announcements do not reach this host"
            if let port = answer.ports[instance] {
                return PeerCheck(check: DoctorCheck(
                    "peer", .fail, detail + offeredDetail, hint: "the checks below ask its responder why (see multicast-path)", exitStatus: .peerNotFound),
                    found: nil, lastKnown: Target(addresses: [answer.source], port: port, expected: PeerID(instance), name: name))
            }
        }
        detail += offeredDetail
        let hint = "on the peer: is 'nearby advertise --service \(service.name)' running? Compare 'nearby browse --types' there and here" + offeredHint
        return PeerCheck(check: DoctorCheck(
            "peer", .fail, detail,
            hint: ([hint] + notFoundHints.filter { !$0.isEmpty }).joined(separator: "; "),
            exitStatus: .peerNotFound), found: nil)
    }

    /// The first answer of the link's that lists an instance `query` names (not this node's own).
    static func answering(_ query: String, in answers: [MDNSQuestion.Answer], selfID: PeerID) -> (MDNSQuestion.Answer, String)? {
        for answer in answers {
            for instance in answer.instances where instance != selfID.rawValue
                && PeerQuery.matches(query, id: instance, name: answer.names[instance]) { return (answer, instance) }
        }
        return nil
    }

    /// The first of a recent peer's addresses that takes a TCP connection at its port (2 s each,
    /// all by `deadline`).
    static func lastKnown(_ recent: RecentPeers.Entry, until deadline: ContinuousClock.Instant) async -> Target? {
        guard let port = recent.port, let addresses = recent.addresses else { return nil }
        for address in PeerAddresses.connectionOrder(addresses).prefix(2) where ContinuousClock.now < deadline {
            guard await Connections.reachable(host: address, port: port, timeout: min(.seconds(2), deadline - .now)) == nil else { continue }
            return Target(addresses: [address], port: port, expected: PeerID(recent.id), name: recent.name ?? recent.id)
        }
        return nil
    }

    /// A TCP connection to each address, then on the first that answered one connection for the
    /// preamble, the handshake and the probe (never an invitation) — all by `deadline`. What the
    /// deadline cut short is a warning that says so, not a failure of the peer.
    static func connectChecks(
        _ target: Target, identity: Identity, preference: EncryptionPreference, knownPeers: KnownPeers,
        probe: String?, until deadline: ContinuousClock.Instant, explained: String? = nil,
        skipped: String? = nil, advertised interfaces: [NetworkInterface]? = nil, record: (DoctorCheck) -> Void
    ) async {
        // Another check already says there is nothing to connect to (a ghost).
        if let skipped { return record(DoctorCheck("connect", .skip, "not judged: \(skipped)")) }
        let port = target.port
        let outOfTime = "run doctor again with a longer --timeout"
        var working: [String] = []
        var failing: [String] = []
        // Addresses the deadline left no time for, or cut short before they answered.
        var unjudged = 0
        // Addresses where nothing listens on the port: no firewall to blame there.
        var refused = 0
        // Addresses no host has (no ARP reply, or EHOSTUNREACH): no firewall to blame there either.
        var absent = 0
        for address in target.addresses {
            let wait = min(.seconds(2), deadline - .now)
            guard wait > .zero else {
                unjudged += 1
                continue
            }
            if let unreachable = await Connections.reachable(host: address, port: port, timeout: wait) {
                // Cut short by the deadline: the wait was shortened to fit it and ran out (NIO's
                // timer counts whole milliseconds on its own clock, so it may fire a hair before
                // `deadline` as this clock reads it).
                let cut = wait < .seconds(2) && (unreachable.timedOut || ContinuousClock.now >= deadline)
                if cut { unjudged += 1 }
                if unreachable.refused { refused += 1 }
                // A timeout alone cannot tell an empty address from a port dropped: the neighbour
                // tables can (ARP's and neighbour discovery's, on this host's own links).
                let neighbour = unreachable.timedOut && !cut ? Neighbours.state(of: address) : nil
                let reason: String
                // IPv4 finds its neighbours by ARP, IPv6 by neighbour discovery.
                let asking = address.contains(":") ? "neighbour discovery" : "ARP"
                if cut {
                    reason = "no answer before doctor's --timeout ran out"
                } else if neighbour == .silent {
                    absent += 1
                    reason = "no host answers at that address (no reply to \(asking) on this link)"
                } else if unreachable.noHost {
                    absent += 1
                    reason = "no host answers at that address (unreachable: no ARP or neighbour reply, or a router said so)"
                } else if neighbour == .answered {
                    reason = "a host is there (it answered \(asking)) but drops port \(port) (no answer in \(seconds(wait)))"
                } else {
                    reason = unreachable.reason
                }
                failing.append("\(address): \(reason)")
            } else {
                working.append(address)
            }
        }
        let detail = (working.map { "\(target.address($0)) connects" } + failing).joined(separator: "; ")
        // `addresses`, for a peer found by name: each address it advertises, said after connect.
        let trials = target.addresses.map { address in
            DoctorCheck.AddressTrial(address: address, failure: working.contains(address) ? nil
                : failing.first { $0.hasPrefix("\(address): ") }.map { String($0.dropFirst(address.count + 2)) } ?? "not tried")
        }
        let addresses = interfaces.map { DoctorCheck.addresses(trials, peer: target.name, port: port, interfaces: $0) }
        let firewall = "a firewall on the peer (or between) drops TCP port \(port): on the peer, 'nft list ruleset' or 'iptables -L -n'"
        guard let reachable = working.first else {
            if !target.addresses.isEmpty, unjudged == target.addresses.count {
                let tried = failing.isEmpty ? "" : " (\(detail))"
                record(DoctorCheck("connect", .warn, "not checked: doctor's --timeout ran out before a TCP connection to \(target.name)\(tried)", hint: outOfTime))
                if let addresses { record(addresses) }
                return
            }
            let what = target.expected == nil ? "no TCP connection to \(target.name)" : "found, but no TCP connection to port \(port)"
            let nothingListens = "nothing listens on port \(port) there: is a nearby node running on the peer ('nearby advertise'), and is that its port? 'nearby browse' shows the port it advertises now"
            let nobody = "no machine answers at \(target.addresses.count == 1 ? "that address" : "those addresses"): check the address "
                + "('ip -brief address' on the peer) and that the peer is up and on this network; 'nearby browse' shows where peers listen"
            let hint = failing.isEmpty ? firewall : refused == failing.count ? nothingListens : absent == failing.count ? nobody : firewall
            record(DoctorCheck("connect", .fail, "\(what): \(detail)", hint: hint, exitStatus: .connectionFailed))
            if let addresses { record(addresses) }
            return
        }
        record(failing.isEmpty
            ? DoctorCheck("connect", .ok, detail)
            : DoctorCheck("connect", .warn, detail, hint: "some addresses do not answer (IPv6 only on one side, a wrong interface, or \(firewall))"))
        if let addresses { record(addresses) }
        let tls: SessionTLS.Contexts
        do {
            tls = try SessionTLS.contexts(for: identity)
        } catch {
            record(DoctorCheck("encryption", .fail, "could not set up TLS: \(ErrorWords.describe(error))", exitStatus: .failure))
            return
        }
        let examined = await Connections.examine(
            host: reachable, port: port, preference: preference, tls: tls, identity: identity, expected: target.expected,
            knownPeers: knownPeers, probe: probe, until: deadline)
        if !examined.encryption.ok, ContinuousClock.now >= deadline {
            return record(DoctorCheck(
                "encryption", .warn, "not checked: doctor's --timeout ran out during the preamble (\(examined.encryption.detail))", hint: outOfTime))
        }
        record(examined.encryption.ok
            ? DoctorCheck("encryption", .ok, examined.encryption.detail)
            : DoctorCheck("encryption", .fail, examined.encryption.detail,
                          hint: "use --encryption optional on one side, or the same mode on both", exitStatus: .connectionFailed))
        var name = target.name
        if case let .proved(peer, _) = examined.identity { name = peer.name }
        if let check = DoctorCheck.identity(examined.identity, peer: name, advertised: target.expected != nil) { record(check) }
        if let check = DoctorCheck.peerSeesUs(
            examined.visibility, peer: name, instance: probe, address: target.address(reachable), explained: explained
        ) { record(check) }
    }
}
