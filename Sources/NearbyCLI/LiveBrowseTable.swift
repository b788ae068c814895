import NearbyBase
import NearbyDiscovery

/// What `browse --live` shows: the peers the daemon reports and their hosts, as found, updated and
/// lost events tell them — the table of `watch` without the packets (no root needed; the TTLs and
/// the questions asked on the link need the packets: `watch`). Pure: updates in, lines out.
/// Bounded like watch's table: at most `capacity` peers (a LAN announcing thousands is counted,
/// not kept), and a lost peer stays `linger` seconds, marked lost, then goes.
struct LiveBrowseTable: Sendable {
    struct Entry: Sendable, Equatable {
        var peer: DiscoveredPeer
        var found: Double
        var changed: Double
        /// What changed last (`addresses`, `info` …), for the row.
        var what: [String] = []
        var lost: Double?
    }

    static let capacity = 256
    static let linger = 10.0
    private(set) var entries: [String: Entry] = [:]
    /// Peers not kept because the table was full.
    private(set) var overflow = 0

    private static func key(_ peer: DiscoveredPeer) -> String { peer.instance + "\u{0}" + (peer.domain ?? "local.") }

    mutating func apply(_ update: Browser.Update, now: Double) {
        expire(now: now)
        switch update {
        case let .found(peer):
            let key = Self.key(peer)
            guard entries[key] != nil || entries.count < Self.capacity else { return overflow += 1 }
            entries[key] = Entry(peer: peer, found: now, changed: now)
        case let .updated(peer, changed):
            let key = Self.key(peer)
            guard var entry = entries[key] else { return }
            entry.peer = peer
            entry.changed = now
            entry.what = changed
            entry.lost = nil
            entries[key] = entry
        case let .lost(peer):
            entries[Self.key(peer)]?.lost = now
        case .failed:
            break
        }
    }

    /// Lost peers whose `linger` is over go.
    mutating func expire(now: Double) {
        entries = entries.filter { $0.value.lost.map { now - $0 <= Self.linger } ?? true }
    }

    /// The table's lines, peers by name, then their hosts with every address per interface.
    func lines(now: Double, service: String) -> [String] {
        func age(_ time: Double) -> String { "\(max(0, Int(now - time)))s ago" }
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }
        let shown = entries.values.filter { $0.lost.map { now - $0 <= Self.linger } ?? true }
            .sorted { ($0.peer.txt.displayName ?? $0.peer.instance, $0.peer.instance) < ($1.peer.txt.displayName ?? $1.peer.instance, $1.peer.instance) }
        let here = shown.filter { $0.lost == nil }.count
        var out = ["PEERS \(here) on \(service)" + (shown.count > here ? ", \(shown.count - here) lost" : "") + (overflow > 0 ? " (\(overflow) more not kept)" : "")]
        for entry in shown.prefix(20) {
            let peer = entry.peer
            let name = peer.txt.displayName.map { "\($0) (\(String(peer.claimedID.prefix(8))))" } ?? peer.instance
            let target = peer.host.map { "\($0):\(peer.port.map(String.init) ?? "?")" } ?? "(not resolved)"
            let info = peer.txt.info.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            let when: String
            if let lost = entry.lost {
                when = "lost \(age(lost))"
            } else if entry.changed > entry.found {
                when = "found \(age(entry.found)), \(entry.what.joined(separator: "+")) \(age(entry.changed))"
            } else {
                when = "found \(age(entry.found))"
            }
            out.append("  " + pad(name, 30) + pad(target, 30) + pad(info.isEmpty ? "-" : info, 20) + when + (peer.domain.map { " in \($0)" } ?? ""))
        }
        if shown.count > 20 { out.append("  … \(shown.count - 20) more") }
        // Hosts: each resolved host name once, with the addresses its peers gave, per interface, in the
        // order connections try them (IPv4, IPv6, link-local): the row does not reorder as they arrive.
        var hosts: [String: (addresses: [String: [String]], peers: Int)] = [:]
        for entry in shown where entry.lost == nil {
            guard let host = entry.peer.host else { continue }
            var row = hosts[host] ?? ([:], 0)
            row.peers += 1
            let interface = entry.peer.interface ?? ""
            for address in entry.peer.addresses where !(row.addresses[interface]?.contains(address) ?? false) {
                row.addresses[interface, default: []].append(address)
            }
            hosts[host] = row
        }
        out.append("HOSTS \(hosts.count)")
        for (host, row) in hosts.sorted(by: { $0.key < $1.key }).prefix(12) {
            let addresses = row.addresses.sorted { $0.key < $1.key }
                .map { "\(PeerAddresses.connectionOrder($0.value).joined(separator: " "))\($0.key.isEmpty ? "" : " (\($0.key))")" }
                .joined(separator: "; ")
            out.append("  " + pad(host, 28) + pad(addresses.isEmpty ? "(no address yet)" : addresses, 40) + "\(row.peers) peer\(row.peers == 1 ? "" : "s")")
        }
        return out.map { TerminalText.escaped($0) }
    }
}
