import Foundation

extension Events.IdentityShown {
    public init(_ identity: Identity, path: String) {
        self.init(
            peer: PeerRef(id: identity.peerID.rawValue, name: identity.displayName),
            fingerprint: identity.fingerprint, path: path,
            created: EventEncoder.timestamp(identity.created))
    }
}

extension Events.PeerSeen {
    /// `selfID` marks our own advertisement, seen from the same identity.
    public init(_ peer: DiscoveredPeer, service: ServiceType, selfID: PeerID?) {
        self.init(
            peer: peer.ref, service: service.name, kind: peer.kind, protocolVersion: peer.txt.protocolVersion,
            info: peer.txt.info, host: peer.host, port: peer.port, addresses: peer.addresses,
            interface: peer.interface, isSelf: peer.instance == selfID?.rawValue,
            elapsedMs: Int(peer.elapsed / .milliseconds(1)))
    }
}

extension Events.Lost {
    public init(_ peer: DiscoveredPeer, service: ServiceType) {
        self.init(peer: peer.ref, service: service.name, elapsedMs: Int(peer.elapsed / .milliseconds(1)))
    }
}

extension DiscoveredPeer {
    /// Whether `query` names this peer: its full ID, a prefix of it, or its display name.
    public func matches(_ query: String) -> Bool {
        !query.isEmpty && (instance.hasPrefix(query) || txt.displayName == query)
    }
}
