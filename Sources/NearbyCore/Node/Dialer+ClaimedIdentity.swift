import NearbyIdentity
import NearbyDiscovery
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
