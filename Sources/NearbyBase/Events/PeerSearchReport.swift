import Foundation

/// What a lookup that found nothing saw instead, for the `peer-not-found` error: peers on the
/// service whose names are near the one asked for, and peers of that name on other service types.
package struct PeerSearchReport: Sendable, Equatable {
    /// A peer seen on another service type.
    package struct Sighting: Sendable, Equatable, Codable {
        /// The DNS-SD type, `_chat._tcp`.
        package var service: String
        package var peer: PeerRef

        package init(service: String, peer: PeerRef) {
            self.service = service
            self.peer = peer
        }
    }

    /// The DNS-SD type that was searched, `_nearby._tcp`.
    package var service: String
    package var near: [PeerRef] = []
    package var elsewhere: [Sighting] = []
    /// `db:5432` that named no peer, and `db` no host the system resolves.
    package var unresolvedHost: String?
    /// Where the search looked (`local.`, `office.example.org.`); empty: `local.` alone.
    package var domains: [String] = []
    /// The command as the person typed it with the near name in place of the one asked for
    /// (`nearby send "Bob's Pi" hi`): the next step instead of doctor, set by the program that
    /// knows its command line (NearbyCLI/PeerNaming.swift).
    package var retyped: String?

    package init(service: String, near: [PeerRef] = [], elsewhere: [Sighting] = []) {
        self.service = service
        self.near = near
        self.elsewhere = elsewhere
    }

    /// The command to run next: a doctor run on the peer, with the service that was used.
    package func hint(for query: String) -> String {
        if let retyped { return retyped }
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
        parts.append(retyped.map { "did you mean `\($0)`?" } ?? "next: `\(hint(for: query))`")
        return parts.joined(separator: "; ")
    }

    package static func label(_ peer: PeerRef) -> String {
        peer.name.map { "'\($0)' (\(peer.id.prefix(8)))" } ?? peer.id
    }

    /// `_chat._tcp` → `chat`, when that is a service name nearby takes.
    package static func shortName(_ type: String) -> String? {
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
