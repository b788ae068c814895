import NearbyBase
import NearbyIdentity

/// Where a node's control socket and lock live: `$XDG_RUNTIME_DIR/nearby`, else `$NEARBY_HOME/run`;
/// one per identity and service type. The directory is 0700: the socket is the same user's only.
package struct NodeAddress: Sendable {
    package let directory: String
    package let name: String

    package init(paths: NearbyPaths, environment: [String: String], peerID: PeerID, service: ServiceType) {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            directory = runtime + "/nearby"
        } else {
            directory = paths.home + "/run"
        }
        name = "\(peerID.rawValue)-\(service.name)"
    }

    package var socket: String { "\(directory)/\(name).sock" }
    package var lock: String { "\(directory)/\(name).lock" }
}
