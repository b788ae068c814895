import NearbyDNS

/// Which dead instances a registering node deletes, and how, so that forged answers cannot steer
/// it. Pure, tested without a server.
///
/// - Only a name directly under `_<service>._tcp.DOMAIN`, not our own, whose TXT carries nearby's
///   protocol key and a `_lease` that ended before `cutoff`; never another type's records.
/// - The update requires the TXT RRset exactly as read (RFC 2136 §2.4.2): the server checks it
///   against its own data, so a forged answer, a peer that refreshed meanwhile, or a replay of the
///   update after either, deletes nothing (NXRRSET).
enum WideAreaCleanup {
    package static func isCandidate(_ name: DNSName, typeName: DNSName, own: String) -> Bool {
        guard name.labels.count == typeName.labels.count + 1, name.isSubdomain(of: typeName),
              let label = name.firstLabel, label.lowercased() != own.lowercased()
        else { return false }
        return true
    }

    package static func removal(of name: DNSName, typeName: DNSName, domain: DNSName, txt: [DNSRecord], cutoff: UInt64) -> DNSUpdate? {
        let sets = txt.filter { $0.type == .txt && $0.name == name }
        // One TXT record per instance is what nearby writes; anything else is not ours to judge.
        guard sets.count == 1, case let .txt(strings) = sets[0].data,
              let expiry = WideAreaLease.expiry(strings), expiry < cutoff,
              TXTRecord.decode(strings.flatMap { [UInt8(min($0.count, 255))] + $0.prefix(255) }).protocolVersion != nil,
              let label = name.firstLabel
        else { return nil }
        var update = DNSUpdate(zone: domain)
        update.require(sets[0])
        update.delete(DNSRecord(name: typeName, type: .ptr, ttl: 0, data: .ptr(name)))
        update.deleteSet(name, .srv)
        update.deleteSet(name, .txt)
        if let host = try? domain.prepending("nearby-\(label)") {
            update.deleteSet(host, .a)
            update.deleteSet(host, .aaaa)
        }
        return update
    }
}
