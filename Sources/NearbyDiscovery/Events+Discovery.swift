import Foundation
import NearbyBase
import NearbyIdentity

extension Events.IdentityShown {
    package init(_ identity: Identity, path: String) {
        self.init(
            peer: PeerRef(id: identity.peerID.rawValue, name: identity.displayName),
            fingerprint: identity.fingerprint, path: path,
            created: EventEncoder.timestamp(identity.created))
    }
}

extension Events.PeerSeen {
    /// `selfID` marks our own advertisement, seen from the same identity.
    package init(_ peer: DiscoveredPeer, service: ServiceType, selfID: PeerID?) {
        self.init(
            peer: peer.ref, service: service.name, kind: peer.kind, protocolVersion: peer.txt.protocolVersion,
            info: peer.txt.info, host: peer.host, port: peer.port, addresses: peer.addresses,
            interface: peer.interface, isSelf: peer.instance == selfID?.rawValue,
            elapsedMs: Int(peer.elapsed / .milliseconds(1)))
        domain = peer.domain
    }
}

extension Events.Lost {
    package init(_ peer: DiscoveredPeer, service: ServiceType) {
        self.init(peer: peer.ref, service: service.name, elapsedMs: Int(peer.elapsed / .milliseconds(1)))
        domain = peer.domain
    }
}

extension DiscoveredPeer {
    /// Whether `query` names this peer: its full ID, a prefix of it, or its display name (`PeerQuery`'s rule).
    package func matches(_ query: String) -> Bool {
        PeerQuery.matches(query, id: claimedID, name: txt.displayName)
    }
}

extension Events {
    /// `browse --types`: a service type announced on the link and how many instances it has now
    /// (0 when the last one went away).
    package struct ServiceTypeSeen: EventBody {
        package static let event = "type"
        package var type: String
        package var instances: Int

        package init(type: String, instances: Int) {
            self.type = type
            self.instances = instances
        }
    }

    /// `browse --service _http._tcp`: one instance of a DNS-SD type that is not nearby's, with its
    /// TXT record decoded as key/value pairs; `state` is `found`, `updated` or `lost`.
    package struct ServiceSeen: EventBody {
        package static let event = "service"
        package var state: String
        package var type: String
        package var name: String
        @Null package var host: String?
        @Null package var port: Int?
        package var addresses: [String]
        @Null package var interface: String?
        package var txt: SortedInfo

        enum CodingKeys: String, CodingKey { case state, type, name, host, port, addresses, interface, txt }

        package init(state: String, type: String, peer: DiscoveredPeer) {
            self.state = state
            self.type = type
            name = peer.instance
            host = peer.host
            port = peer.port
            addresses = peer.addresses
            interface = peer.interface
            txt = SortedInfo(peer.txt.raw)
        }
    }
}

extension Events {
    /// `browse` that ended (--timeout, --now) without finding anything: what was looked for, how
    /// long, and the command to run next. Only a JSON reader gets it; a person reads it on stderr.
    package struct NothingFound: EventBody {
        package static let event = "nothing-found"
        package var service: String
        package var seconds: Double
        package var hint: String
        /// The other service types with instances on the link (a browse of a nearby service only);
        /// omitted when none was seen.
        package var types: [String]?

        package init(service: String, seconds: Double, hint: String, types: [String]? = nil) {
            self.service = service
            self.seconds = seconds
            self.hint = hint
            self.types = types
        }
    }
}

extension Events {
    /// A lookup of a peer by name still running after 2 s: what it looks for, and where. Goes to
    /// the command that asked (on a terminal, a line on stderr).
    package struct Looking: EventBody {
        package static let event = "looking"
        package var peer: String
        package var service: String
        package var seconds: Double
        /// Peers seen whose name or ID is close to the one asked for (a typo, another case, a prefix
        /// of the name): what the user may have meant.
        package var near: [PeerRef]?
        /// How much longer the lookup goes on (until `--timeout`).
        package var remaining: Double?

        package init(peer: String, service: String, seconds: Double, near: [PeerRef]? = nil, remaining: Double? = nil) {
            self.peer = peer
            self.service = service
            self.seconds = seconds
            self.near = near
            self.remaining = remaining
        }
    }
}
