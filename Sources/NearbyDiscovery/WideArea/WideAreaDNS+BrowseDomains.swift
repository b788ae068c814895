import Foundation
import NearbyDNS
import NearbyBase

/// RFC 6763 §11: the browse domains a network offers, from the PTR records of
/// `b._dns-sd._udp.<domain>` (browse domains) and `lb._dns-sd._udp.<domain>` (the default one).
package struct BrowseDomain: Sendable, Equatable {
    package var domain: String
    /// Named by `lb._dns-sd._udp`: the one to browse when the user names none.
    package var isDefault: Bool
    /// Where it was found: the domain whose `b._dns-sd._udp` named it.
    package var from: String
}

extension WideAreaDNS {
    /// Where to look when no `--domain` is given: the `search` and `domain` lines of
    /// /etc/resolv.conf, and the reverse zone (`in-addr.arpa`) of each local IPv4 /24 network.
    package static func candidateDomains(resolvConf path: String = "/etc/resolv.conf") -> [DNSName] {
        var names: [DNSName] = []
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let first = words.first, first == "search" || first == "domain" else { continue }
                for word in words.dropFirst() { if let name = try? DNSName(String(word)) { names.append(name) } }
            }
        }
        for address in WideAreaRegistrar.localAddresses().v4 {
            let labels = address.prefix(3).reversed().map { Array(String($0).utf8) } + [Array("in-addr".utf8), Array("arpa".utf8)]
            if let name = try? DNSName(labels: labels) { names.append(name) }
        }
        var seen = Set<DNSName>()
        return names.filter { seen.insert($0).inserted }
    }

    /// For `doctor PEER` on mDNS: the DNS-SD domains the network offers (none when the resolver
    /// does not answer within `within`), so a peer not on this link can be looked for there.
    package static func offeredDomains(environment: [String: String], within limit: Duration = .milliseconds(1500)) async -> [String] {
        guard var settings = try? WideAreaSettings(domain: "invalid", server: nil, keyPath: "") else { return [] }
        settings.apply(environment: environment)
        settings.timeout = limit
        let dns = WideAreaDNS(settings: settings)
        let found = (try? await dns.browseDomains(in: candidateDomains(resolvConf: settings.resolvConf))) ?? []
        var seen = Set<String>()
        return found.map(\.domain).filter { seen.insert($0).inserted }
    }

    /// The domains `b._dns-sd._udp` and `lb._dns-sd._udp` name under each of `candidates`.
    package func browseDomains(in candidates: [DNSName]) async throws(NearbyError) -> [BrowseDomain] {
        let server = try queryServer()
        var found: [BrowseDomain] = []
        for candidate in candidates {
            for (label, isDefault) in [("b", false), ("lb", true)] {
                guard let name = try? DNSName("\(label)._dns-sd._udp").appending(candidate) else { continue }
                let records: [DNSRecord]
                do {
                    records = try await lookup(name, .ptr, server: server)
                } catch .wideArea(.zoneRefused) {
                    continue  // not this server's zone: nothing offered there
                }
                for case let .ptr(target) in records.map(\.data) {
                    found.append(BrowseDomain(domain: target.description, isDefault: isDefault, from: candidate.description))
                }
            }
        }
        return found
    }
}
