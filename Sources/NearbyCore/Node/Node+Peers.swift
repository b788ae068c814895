extension Node {
    struct Target {
        var host: String
        var port: Int
        var expected: PeerID?
        var name: String?
        var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// `HOST:PORT` skips discovery (the identity is still checked in the handshake); anything else
    /// is looked up among discovered peers by ID, unambiguous ID prefix, or display name. Ends at
    /// once when the discovery daemon is unavailable or the calling task is cancelled.
    func resolve(_ query: String, until deadline: ContinuousClock.Instant, timeout: Double) async throws(NearbyError) -> Target {
        if let direct = Self.parseHostPort(query) { return Target(host: direct.host, port: direct.port) }
        startDiscovery()
        while true {
            if let failure = discovery.failure { throw failure }
            let candidates = discovery.candidates(query, excluding: identity.peerID)
            if let exact = candidates.first(where: { $0.instance == query }) { return try target(for: exact) }
            if candidates.count > 1 {
                throw .peerAmbiguous(query, candidates: candidates.map { "\($0.instance) (\($0.txt.displayName ?? "?"))" }.sorted())
            }
            // A name another peer shares may show up a moment later: choose only once browsing has
            // run long enough for every peer to answer.
            if let only = candidates.first, ContinuousClock.now >= discovery.startedAt + DiscoveryCache.ambiguityWindow {
                return try target(for: only)
            }
            guard ContinuousClock.now < deadline else { throw .peerNotFound(query, waitedSeconds: timeout) }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                throw .cancelled("looking for \(query)")
            }
        }
    }

    private func target(for peer: DiscoveredPeer) throws(NearbyError) -> Target {
        guard peer.kind == .nearby else { throw .notANearbyPeer("\(peer.instance) (\(peer.txt.displayName ?? "?"))") }
        guard let port = peer.port else { throw .connectionFailed("\(peer.instance) has no port") }
        let ordered = peer.addresses.filter { !$0.contains(":") } + peer.addresses.filter { $0.contains(":") && !$0.hasPrefix("fe80") }
            + peer.addresses.filter { $0.hasPrefix("fe80") }
        guard let host = ordered.first ?? peer.host else { throw .connectionFailed("\(peer.instance) has no address") }
        return Target(host: host, port: port, expected: PeerID(peer.instance), name: peer.txt.displayName)
    }

    private func startDiscovery() {
        guard let updates = discovery.start(configuration.service, wideArea: configuration.wideArea) else { return }
        spawn { [self] in
            for await update in updates { await discovered(update) }
        }
    }

    private func discovered(_ update: Browser.Update) { discovery.apply(update) }

    static func parseHostPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }
}
