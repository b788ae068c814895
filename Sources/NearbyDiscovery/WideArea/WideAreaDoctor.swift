import NearbyDNS
import NearbyBase
import NearbyIdentity

/// `nearby doctor --domain`: the server answers, the zone exists, the key is accepted (a probe
/// record registered and deleted), the clock is close enough for TSIG, this node's records are
/// there, and with a PEER, PTR → SRV → A/AAAA resolves. Each failure named in words with a hint.
package struct WideAreaDoctor: Sendable {
    package let settings: WideAreaSettings
    let dns: WideAreaDNS

    package init(settings: WideAreaSettings) {
        self.settings = settings
        dns = WideAreaDNS(settings: settings)
    }

    static var serverHint: String { "check \(Spelling.option(.dnsServer)) (or /etc/resolv.conf), that named runs, and that UDP and TCP port 53 are open on the way" }
    static let zoneHint = "check the domain's spelling, and that the server is primary for it with update-policy for this key (README, 'Beyond one link')"
    static let keyHint = "use the key file the server's named.conf includes (same name and secret); tsig-keygen makes one"
    static let clockHint = "set the clock right (NTP): TSIG refuses signatures more than 300 s off"

    /// Runs the checks in order, stopping where the next one cannot mean anything.
    package func run(service: ServiceType, selfID: PeerID, record: (DoctorCheck) -> Void) async {
        let domain = settings.domainText
        let queryServer: DNSServerAddress
        do {
            queryServer = try dns.queryServer()
            let soa = try await dns.lookup(settings.domain, .soa, server: queryServer)
            record(DoctorCheck("dns-server", .ok, "\(queryServer) answers queries"))
            guard case let .soa(data)? = soa.first?.data else {
                record(DoctorCheck("zone", .fail, "\(queryServer) has no zone \(domain) (no SOA record for it)", hint: Self.zoneHint, exitStatus: .dnsZoneRefused))
                return
            }
            record(DoctorCheck("zone", .ok, "\(domain) exists (primary \(data.primary))"))
        } catch .wideArea(.zoneRefused(_, let server, let rcode)) {
            record(DoctorCheck("dns-server", .ok, "\(server) answers queries"))
            record(DoctorCheck("zone", .fail, "\(server) refused queries for \(domain) (\(rcode)): it does not serve that zone",
                               hint: Self.zoneHint, exitStatus: .dnsZoneRefused))
            return
        } catch {
            record(Self.check(for: error, name: "dns-server"))
            return
        }
        await keyChecks(record: record)
        await recordChecks(service: service, selfID: selfID, server: queryServer, record: record)
    }

    /// Registers and deletes a probe TXT record under `_nearby-doctor._tcp.DOMAIN`.
    func keyChecks(record: (DoctorCheck) -> Void) async {
        let key: TSIGKey
        do {
            key = try settings.loadKey()
        } catch {
            record(Self.check(for: error, name: "key"))
            record(DoctorCheck("clock", .warn, "not checked: no usable key", hint: Self.clockHint))
            return
        }
        do {
            let server = try await dns.updateServer()
            let name = try DNSName("_nearby-doctor._tcp").appending(settings.domain).prepending("probe-\(DNSTransport.randomID())")
            var add = DNSUpdate(zone: settings.domain)
            add.add(DNSRecord(name: name, type: .txt, ttl: 1, data: .txt([Array("probe=1".utf8)])))
            try await dns.send(add, key: key, server: server)
            var delete = DNSUpdate(zone: settings.domain)
            delete.deleteSet(name, .txt)
            try await dns.send(delete, key: key, server: server)
            record(DoctorCheck("key", .ok, "\(server) accepted an update signed with \(key.name) (a probe record added and deleted)"))
            record(DoctorCheck("clock", .ok, "our clock is within TSIG's 300 s of the server's"))
        } catch let error as NearbyError {
            if case .wideArea(.clockSkew) = error {
                record(DoctorCheck("key", .ok, "the server knows the key"))
                record(Self.check(for: error, name: "clock"))
            } else {
                record(Self.check(for: error, name: "key"))
                record(DoctorCheck("clock", .warn, "not checked: the update was refused first", hint: Self.clockHint))
            }
        } catch {
            record(DoctorCheck("key", .fail, "\(error)", hint: Self.keyHint))
        }
    }

    func recordChecks(service: ServiceType, selfID: PeerID, server: DNSServerAddress, record: (DoctorCheck) -> Void) async {
        guard let typeName = try? DNSName(service.registrationType).appending(settings.domain),
              let ours = try? typeName.prepending(selfID.rawValue)
        else { return }
        do {
            let srv = try await dns.lookup(ours, .srv, server: server)
            record(srv.isEmpty
                ? DoctorCheck("our-records", .warn, "this identity is not registered in \(settings.domainText)",
                              hint: "'\(Spelling.command(.advertise, Spelling.option(.domain, settings.domainText)))' registers it")
                : DoctorCheck("our-records", .ok, "\(ours) is registered"))
        } catch {
            record(Self.check(for: error, name: "our-records"))
        }
    }

    /// PEER's chain: PTR → SRV → A/AAAA, as `browse --domain` walks it. Returns the peer if found.
    package func findPeer(_ query: String, service: ServiceType, selfID: PeerID, record: (DoctorCheck) -> Void) async -> DiscoveredPeer? {
        do {
            let typeName = try DNSName(service.registrationType).appending(settings.domain)
            let seen = try await WideAreaBrowser.poll(dns, typeName: typeName, domain: settings.domainText, started: .now)
            let matches = seen.values.filter { $0.matches(query) && $0.instance != selfID.rawValue }
            guard let peer = matches.first(where: { $0.instance == query }) ?? matches.first else {
                record(DoctorCheck("peer", .fail, "\(query) is not registered in \(settings.domainText) (found: \(seen.keys.sorted().joined(separator: ", ").isEmpty ? "nobody" : seen.keys.sorted().joined(separator: ", ")))",
                                   hint: "is it running '\(Spelling.command(.advertise, Spelling.option(.domain, settings.domainText)))'? A node killed without stopping is gone once its lease ends", exitStatus: .peerNotFound))
                return nil
            }
            guard !peer.addresses.isEmpty else {
                record(DoctorCheck("peer", .fail, "\(peer.instance) is registered, but its host \(peer.host ?? "?") has no A or AAAA record",
                                   hint: "the peer's addresses did not reach the zone: check update-policy allows A/AAAA", exitStatus: .peerNotFound))
                return nil
            }
            record(DoctorCheck("peer", .ok, "PTR → SRV → A/AAAA: \(peer.instance) at \(peer.host ?? "?") port \(peer.port ?? 0), \(peer.addresses.joined(separator: ", "))"))
            return peer
        } catch {
            record(Self.check(for: error, name: "peer"))
            return nil
        }
    }

    static func check(for error: any Error, name: String) -> DoctorCheck {
        guard let error = error as? NearbyError else { return DoctorCheck(name, .fail, "\(error)") }
        let detail = error.errorDescription ?? "\(error)"
        let hint: String? = switch error {
        case .wideArea(.unreachable), .wideArea(.noServer): serverHint
        case .wideArea(.zoneRefused): zoneHint
        case .wideArea(.keyRejected), .wideArea(.keyFile): keyHint
        case .wideArea(.clockSkew): clockHint
        default: nil
        }
        return DoctorCheck(name, .fail, detail, hint: hint, exitStatus: error.exitStatus)
    }
}
