import Foundation
import NearbyBase

extension PeerSearchReport {
    /// The peers among `peers` whose names are near `query` without matching it.
    package static func near(_ query: String, among peers: some Sequence<DiscoveredPeer>, excluding me: String) -> [PeerRef] {
        peers.filter { $0.isNear(query) && $0.claimedID != me }.sorted { $0.instance < $1.instance }.map(\.ref)
    }

}

extension DiscoveredPeer {
    /// Whether this peer's name is near `query` without matching it: what a person mistypes
    /// (`NearName`: punctuation, spacing, case, a prefix, one or two letters off).
    package func isNear(_ query: String) -> Bool {
        [txt.displayName, instance].compactMap { $0 }.contains { $0 != query && NearName.isNear(query, $0) }
    }
}

/// Browses every other service type on the link for a peer named like `query`, while a lookup
/// waits: `finish()` stops it and returns what it saw. Best effort — a failure finds nothing.
package final class ElsewhereSearch: Sendable {
    private let query: String
    private let skipping: String
    private let state = Locked<(seen: [PeerSearchReport.Sighting], stops: [@Sendable () -> Void], stopped: Bool)>(([], [], false))

    /// At most this many other types are browsed.
    static let maxTypes = 16

    package init(query: String, skipping: String) {
        self.query = query
        self.skipping = skipping
    }

    package func start() {
        let types = TypeBrowser()
        guard keep({ types.stop() }) else { return }
        Task { [self] in
            guard let updates = try? await types.start() else { return }
            var browsed = Set<String>()
            for await update in updates {
                guard case let .type(type, instances) = update, instances > 0, type != skipping, type.hasSuffix("._tcp"),
                      browsed.count < Self.maxTypes, browsed.insert(type).inserted
                else { continue }
                browse(type)
            }
        }
    }

    private func browse(_ type: String) {
        let browser = Browser(registrationType: type)
        guard keep({ browser.stop() }) else { return }
        Task { [self] in
            guard let updates = try? await browser.start() else { return }
            for await update in updates {
                guard case let .found(peer) = update, peer.matches(query) || peer.isNear(query) else { continue }
                let sighting = PeerSearchReport.Sighting(service: type, peer: peer.ref)
                state.withLock { if !$0.seen.contains(sighting) { $0.seen.append(sighting) } }
            }
        }
    }

    /// Registers a stop; false (and stops it now) when the search is already finished.
    private func keep(_ stop: @escaping @Sendable () -> Void) -> Bool {
        let kept = state.withLock { state in
            guard !state.stopped else { return false }
            state.stops.append(stop)
            return true
        }
        if !kept { stop() }
        return kept
    }

    package func finish() -> [PeerSearchReport.Sighting] {
        let (seen, stops) = state.withLock { state in
            state.stopped = true
            defer { state.stops = [] }
            return (state.seen, state.stops)
        }
        stops.forEach { $0() }
        return seen.sorted { ($0.service, $0.peer.id) < ($1.service, $1.peer.id) }
    }
}
