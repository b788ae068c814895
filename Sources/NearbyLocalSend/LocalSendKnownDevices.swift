import Foundation
import NearbyIdentity
import NearbyBase

/// The fingerprint an alias came with when its first transfer was accepted, one `fingerprint
/// alias` line each in `$NEARBY_HOME/localsend_known`. The official app trusts a device by its
/// fingerprint (its favourites, its certificate since 1.18 shows on every request), not by its
/// alias: a known alias with another fingerprint is another device. It is refused only where the
/// alias itself was what the user trusted (`--accept-from NAME`); elsewhere it is a warning
/// (`fingerprint-changed`). A sender's fingerprint is the certificate it shows when it shows one
/// (the official apps do), else only a claim in its request (docs/security.md).
package final class LocalSendKnownDevices: Sendable {
    package let path: String
    private let pins = Locked<[String: String]?>(nil)
    static let maxEntries = 4096

    package init(paths: NearbyPaths) { path = paths.home + "/localsend_known" }

    private func loaded(_ pins: inout [String: String]?) -> [String: String] {
        if let pins { return pins }
        var table: [String: String] = [:]
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            for line in text.split(separator: "\n").prefix(Self.maxEntries) {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { table[String(parts[1])] = String(parts[0]).uppercased() }
            }
        }
        pins = table
        return table
    }

    /// The fingerprint the alias was pinned to, if any.
    package func pinned(alias: String) -> String? {
        pins.withLock { pins in loaded(&pins)[alias] }
    }

    /// Nil when the alias is new or came with this fingerprint before; else the sentence to show.
    package func check(alias: String, fingerprint: String) -> String? {
        guard let pinned = pinned(alias: alias), pinned != fingerprint.uppercased() else { return nil }
        return changeSentence(alias: alias, pinned: pinned, now: fingerprint)
    }

    func changeSentence(alias: String, pinned: String, now fingerprint: String) -> String {
        "LOCALSEND FINGERPRINT CHANGED: '\(alias)' came with fingerprint \(pinned) before and \(fingerprint.uppercased()) now; another device uses its name, or it was reinstalled. If that device really was reinstalled, remove its line from \(path)"
    }

    /// Whether a sender with this fingerprint had a transfer accepted before (any alias).
    package func knows(fingerprint: String) -> Bool {
        let wanted = fingerprint.uppercased()
        return pins.withLock { pins in loaded(&pins).values.contains(wanted) }
    }

    /// Pins the alias to the fingerprint (first accepted transfer only).
    package func remember(alias: String, fingerprint: String) {
        pins.withLock { pins in
            var table = loaded(&pins)
            guard table[alias] == nil, table.count < Self.maxEntries, !alias.contains("\n") else { return }
            table[alias] = fingerprint.uppercased()
            pins = table
            let text = table.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)\n" }.joined()
            let temporary = path + ".tmp-\(getpid())"
            if FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) {
                _ = rename(temporary, path)
            }
        }
    }
}
