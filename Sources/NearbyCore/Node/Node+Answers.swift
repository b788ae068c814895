import Foundation

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
            if sessions.values.contains(where: { Self.matches(query, $0.peer) }) { return }
            if await dialer.seesAnother(query) { return }
        }
        throw .invalidArgument(
            "that is this machine (\(me.rawValue), '\(identity.displayName)'): name another peer by its ID, display name or HOST:PORT")
    }
}

extension Dialer {
    /// Whether another peer than this node carries `query`, once browsing has run its ambiguity window.
    func seesAnother(_ query: String) async -> Bool {
        startDiscovery()
        let settled = discovery.startedAt + DiscoveryCache.ambiguityWindow
        while !discovers(query), ContinuousClock.now < settled, discovery.failure == nil, !Task.isCancelled {
            let change = OneShot<Void>()
            discoveryWaiters.removeAll { $0.isSettled }
            discoveryWaiters.append(change)
            _ = await change.wait(until: settled)
        }
        return discovers(query)
    }

    /// "Still looking": how long so far, how long the lookup goes on, and the names seen that come
    /// close to the one asked for.
    func lookingEvent(_ query: String, started: ContinuousClock.Instant, deadline: ContinuousClock.Instant) -> Events.Looking {
        let now = ContinuousClock.now
        let near = PeerSearchReport.near(query, among: discovery.peers.values, excluding: me.rawValue)
        func seconds(_ duration: Duration) -> Double { Double(duration / .milliseconds(1)).rounded() / 1000 }
        return Events.Looking(
            peer: query, service: configuration.service.registrationType, seconds: seconds(now - started),
            near: near, remaining: seconds(max(deadline - now, .zero)))
    }
}
