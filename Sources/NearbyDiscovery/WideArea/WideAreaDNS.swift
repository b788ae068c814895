import Foundation
import NearbyDNS
import NearbyBase

/// Queries and signed updates against the domain's DNS server, for the registrar, the browser and
/// `doctor --domain`.
package struct WideAreaDNS: Sendable {
    package let settings: WideAreaSettings

    package init(settings: WideAreaSettings) { self.settings = settings }

    /// Where queries go: `--dns-server`, else the system's resolver.
    package func queryServer() throws(NearbyError) -> DNSServerAddress {
        if let server = settings.server { return server }
        guard let system = DNSServerAddress.systemResolver(path: settings.resolvConf) else {
            throw .wideArea(.noServer(domain: settings.domainText, reason: "no nameserver in \(settings.resolvConf)"))
        }
        return system
    }

    /// The records of `type` at `name` in the answer (none for NXDOMAIN or no data).
    package func lookup(_ name: DNSName, _ type: DNSType, server: DNSServerAddress? = nil) async throws(NearbyError) -> [DNSRecord] {
        let server = if let server { server } else { try queryServer() }
        var query = DNSMessage.query(id: DNSTransport.randomID(), name: name, type: type)
        // EDNS0: answers up to the size we read over UDP; larger ones come truncated, then over TCP.
        query.additional = [DNSRecord(name: .root, type: .opt, rrClass: DNSClass(rawValue: UInt16(DNSTransport.udpPayloadSize)), ttl: 0, data: .empty)]
        let wire: [UInt8]
        do {
            wire = try query.encode()
        } catch {
            throw .invalidArgument("cannot build a DNS query for \(name)")
        }
        let reply = try await DNSTransport(server: server, deadline: settings.timeout).exchange(query, wire: wire)
        switch reply.rcode {
        case .noError, .nxDomain: break
        case .refused, .notAuth: throw .wideArea(.zoneRefused(zone: settings.domainText, server: server.description, rcode: reply.rcode.description))
        default: throw .wideArea(.failed(server: server.description, what: "answered a query for \(name) with \(reply.rcode)"))
        }
        return reply.answers.filter { $0.name == name && $0.type == type && $0.rrClass == .in }
    }

    /// The server updates go to: `--dns-server`, else SRV `_dns-update._udp.DOMAIN`, else the
    /// zone's SOA primary (RFC 2136 §4), port 53.
    package func updateServer() async throws(NearbyError) -> DNSServerAddress {
        if let server = settings.server { return server }
        let name = try? settings.domain.prepending("_udp").prepending("_dns-update")
        if let name, case let .srv(_, _, port, target)? = try? await lookup(name, .srv).first?.data {
            return DNSServerAddress(host: await address(of: target), port: Int(port))
        }
        guard case let .soa(soa)? = try await lookup(settings.domain, .soa).first?.data else {
            throw .wideArea(.noServer(domain: settings.domainText, reason: "no SRV _dns-update._udp and no SOA for it"))
        }
        return DNSServerAddress(host: await address(of: soa.primary))
    }

    /// A host's address through the same server (the system's resolver may not know the domain),
    /// else its name for the system to resolve.
    func address(of host: DNSName) async -> String {
        for type in [DNSType.a, .aaaa] {
            if let record = try? await lookup(host, type).first, let text = WideAreaBrowser.text(record.data) { return text }
        }
        return String(host.description.dropLast())
    }

    /// Sends a signed UPDATE and returns once the server applied it; every refusal in words.
    package func send(_ update: DNSUpdate, key: TSIGKey, server: DNSServerAddress) async throws(NearbyError) {
        let message = update.message(id: DNSTransport.randomID())
        let signed: (bytes: [UInt8], mac: [UInt8])
        do {
            signed = try TSIG.sign(try message.encode(), key: key, time: signingTime())
        } catch {
            throw .invalidArgument("cannot build the DNS update")
        }
        let requestMAC = signed.mac
        // A success must carry the server's valid signature; an error reply (which may be unsigned,
        // as BADKEY and BADSIG are) can only make us fail, never succeed, so it is taken as it is.
        let reply = try await DNSTransport(server: server, deadline: settings.timeout).exchange(message, wire: signed.bytes) { reply, bytes in
            guard reply.rcode == .noError else { return true }
            return (try? TSIG.verify(bytes, key: key, now: signingTime(), requestMAC: requestMAC)) != nil
        }
        let tsigError: UInt16? = if case let .tsig(data)? = reply.tsig?.data { data.error } else { nil }
        if let failure = WideAreaFailure.update(
            rcode: reply.rcode, tsigError: tsigError, zone: settings.domainText, server: server.description) {
            throw .wideArea(failure)
        }
    }

    static func now() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970)) }

    func signingTime() -> UInt64 { UInt64(max(0, Int64(Self.now()) + settings.clockSkew)) }
}
