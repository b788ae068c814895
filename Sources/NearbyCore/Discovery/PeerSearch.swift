import Foundation
import Synchronization

/// What a lookup that found nothing saw instead, for the `peer-not-found` error: peers on the
/// service whose names are near the one asked for, and peers of that name on other service types.
package struct PeerSearchReport: Sendable, Equatable {
    /// A peer seen on another service type.
    package struct Sighting: Sendable, Equatable, Codable {
        /// The DNS-SD type, `_chat._tcp`.
        package var service: String
        package var peer: PeerRef
    }

    /// The DNS-SD type that was searched, `_nearby._tcp`.
    package var service: String
    package var near: [PeerRef] = []
    package var elsewhere: [Sighting] = []
    /// `db:5432` that named no peer, and `db` no host the system resolves.
    package var unresolvedHost: String?
    /// Where the search looked (`local.`, `office.example.org.`); empty: `local.` alone.
    package var domains: [String] = []

    package init(service: String, near: [PeerRef] = [], elsewhere: [Sighting] = []) {
        self.service = service
        self.near = near
        self.elsewhere = elsewhere
    }

    /// The peers among `peers` whose names are near `query` without matching it.
    package static func near(_ query: String, among peers: some Sequence<DiscoveredPeer>, excluding me: String) -> [PeerRef] {
        peers.filter { $0.isNear(query) && $0.claimedID != me }.sorted { $0.instance < $1.instance }.map(\.ref)
    }

    /// The command to run next: a doctor run on the peer, with the service that was used.
    package func hint(for query: String) -> String {
        let option = service == ServiceType.default.registrationType ? [] : [Spelling.option(.service, Self.shortName(service) ?? service)]
        return Spelling.command(.doctor, option + Self.domainOptions(domains) + [Self.shellQuoted(query)])
    }

    /// ` (local., office.example.org.)` after the service when the search went beyond the link.
    package var places: String { Self.places(domains) }

    package static func places(_ domains: [String]) -> String {
        domains.allSatisfy { $0 == "local." } ? "" : " (" + domains.joined(separator: ", ") + ")"
    }

    /// `--domain D` for every unicast domain searched, for a doctor that looks in the same places.
    package static func domainOptions(_ domains: [String]) -> [String] {
        domains.filter { $0 != "local." }.map { Spelling.option(.domain, shellQuoted($0.hasSuffix(".") ? String($0.dropLast()) : $0)) }
    }

    /// The sentences after "peer X was not found": what was seen instead, then what to do.
    package func sentences(for query: String) -> String {
        var parts: [String] = []
        if let host = unresolvedHost {
            parts.append("nor is '\(host)' a host name this machine resolves — name a peer by its display name or ID as it advertises (a peer called '\(host):…' is found that way too), a host by its address and port, such as 192.0.2.10:\(query.split(separator: ":").last ?? "PORT")")
        }
        if !near.isEmpty {
            parts.append("on \(service) there is " + near.map(Self.label).joined(separator: ", ") + " (names are matched exactly)")
        }
        for sighting in elsewhere {
            let add = Self.shortName(sighting.service).map { ": add `\(Spelling.option(.service, $0))`" } ?? ""
            parts.append("\(Self.label(sighting.peer)) is on \(sighting.service)\(add)")
        }
        parts.append("next: `\(hint(for: query))`")
        return parts.joined(separator: "; ")
    }

    static func label(_ peer: PeerRef) -> String {
        peer.name.map { "'\($0)' (\(peer.id.prefix(8)))" } ?? peer.id
    }

    /// `_chat._tcp` → `chat`, when that is a service name nearby takes.
    static func shortName(_ type: String) -> String? {
        guard type.hasPrefix("_"), type.hasSuffix("._tcp") else { return nil }
        return try? ServiceType(String(type.dropFirst().dropLast("._tcp".count))).name
    }

    /// `text` as one shell word: as it is when plain, else single-quoted with `'\''` for each `'`.
    package static func shellQuoted(_ text: String) -> String {
        let plain = text.unicodeScalars.allSatisfy { $0.isASCII && (plainCharacters.contains($0)) }
        return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static let plainCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:/@%+,".unicodeScalars)
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
    private let state = Mutex<(seen: [PeerSearchReport.Sighting], stops: [@Sendable () -> Void], stopped: Bool)>(([], [], false))

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
