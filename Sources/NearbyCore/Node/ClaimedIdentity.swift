/// A peer is known by the identity its handshake proves, never by the DNS-SD instance name it is
/// advertised under: a node whose name another host took (a squatter, a stale record) advertises
/// under the daemon's alternative, `ID #2`, and is still the peer `ID`. A record only claims an
/// ID; the TLS handshake with the expected ID decides, and a record whose host fails it is an
/// impostor, passed over for the other records that claim the same ID.
extension DiscoveredPeer {
    /// The peer ID this record claims: its instance name without the ` #N` a DNS-SD daemon adds
    /// when another host had the name first (only when what is left is a peer ID).
    package var claimedID: String { Self.claimedID(instance) }

    package static func claimedID(_ instance: String) -> String {
        guard let mark = instance.range(of: " #", options: .backwards) else { return instance }
        let number = instance[mark.upperBound...]
        let id = String(instance[..<mark.lowerBound])
        guard !number.isEmpty, number.count <= 4, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber), PeerID(id) != nil else { return instance }
        return id
    }

    /// How a record that failed the identity check is remembered: its name and where it pointed.
    var impostorKey: String { "\(instance)|\(port.map(String.init) ?? "-")" }
}

extension DiscoveryCache {
    /// Peers other than `me` that `query` names, one record per claimed ID: a nearby node's record
    /// before another kind's, and never one whose host failed the identity check already.
    static func oneRecordPerID(_ records: [DiscoveredPeer], impostors: Set<String>) -> [DiscoveredPeer] {
        var chosen: [String: DiscoveredPeer] = [:]
        for record in records.sorted(by: { $0.instance < $1.instance }) where !impostors.contains(record.impostorKey) {
            let id = record.claimedID
            if let kept = chosen[id], kept.kind == .nearby || record.kind != .nearby { continue }
            chosen[id] = record
        }
        return chosen.values.sorted { $0.instance < $1.instance }
    }
}

extension Dialer {
    /// Marks a record as an impostor when another record claims the same ID (worth trying), and
    /// says so. The only record of an ID is never marked: a host that did not answer once (a
    /// firewall, an outage) is still the one to try next time, in a node that runs for days.
    func passOver(_ record: String, claiming id: PeerID?) -> Bool {
        guard let id, !discovery.impostors.contains(record), discovery.impostors.count < 256 else { return false }
        let others = discovery.peers.values.contains {
            $0.claimedID == id.rawValue && $0.impostorKey != record && !discovery.impostors.contains($0.impostorKey)
        }
        guard others else { return false }
        discovery.impostors.insert(record)
        return true
    }
}
