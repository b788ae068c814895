import NearbyIdentity

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
    package var impostorKey: String { "\(instance)|\(port.map(String.init) ?? "-")" }
}
