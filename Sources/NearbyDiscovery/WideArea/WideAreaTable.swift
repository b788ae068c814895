/// What one poll of a domain means: compared with the last poll, each instance is found, updated
/// (name, info, port or addresses changed, named as on mDNS) or lost. Pure, tested without sockets.
struct WideAreaTable {
    private(set) var peers: [String: DiscoveredPeer] = [:]

    mutating func apply(_ seen: [String: DiscoveredPeer]) -> [Browser.Update] {
        var updates: [Browser.Update] = []
        for instance in peers.keys.sorted() where seen[instance] == nil {
            if let gone = peers.removeValue(forKey: instance) { updates.append(.lost(gone)) }
        }
        for instance in seen.keys.sorted() {
            guard let peer = seen[instance] else { continue }
            if let old = peers[instance] {
                var changed: [String] = []
                if old.txt.displayName != peer.txt.displayName { changed.append("name") }
                if old.txt.info != peer.txt.info || old.txt.protocolVersion != peer.txt.protocolVersion { changed.append("info") }
                if old.port != peer.port || old.host != peer.host { changed.append("port") }
                if Set(old.addresses) != Set(peer.addresses) { changed.append("addresses") }
                if !changed.isEmpty { updates.append(.updated(peer, changed: changed)) }
            } else {
                updates.append(.found(peer))
            }
            peers[instance] = peer
        }
        return updates
    }

    /// Every peer lost at once (browsing stopped working).
    mutating func removeAll() -> [Browser.Update] {
        defer { peers = [:] }
        return peers.keys.sorted().compactMap { peers[$0].map(Browser.Update.lost) }
    }
}
