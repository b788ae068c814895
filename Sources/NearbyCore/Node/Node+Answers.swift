import Foundation
import NearbyBase
import NearbyDiscovery

/// Answers that need no waiting: this machine named as the peer, and, while a lookup goes on, the
/// names it may have meant.
extension Node {
    /// Refuses a PEER that names this machine — its ID at once; its display name or an ID prefix
    /// once browsing has had its ambiguity window (300 ms) to show another peer that carries it —
    /// instead of searching the network for it until `--timeout`.
    func refuseSelf(_ query: String) async throws(NearbyError) {
        let me = identity.peerID
        guard PeerQuery.matches(query, id: me.rawValue, name: identity.displayName),
              Dialer.parseHostPort(query).map({ Dialer.isIPAddress($0.host) }) != true else { return }
        if query != me.rawValue {
            if sessions.all.contains(where: { Self.matches(query, $0.peer) }) { return }
            if await dialer.seesAnother(query) { return }
        }
        throw .invalidArgument(
            "that is this machine (\(me.rawValue), '\(identity.displayName)'): name another peer by its ID, display name or HOST:PORT")
    }
}
