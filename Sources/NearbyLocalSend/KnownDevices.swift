import Foundation
import NearbyCore
import Synchronization
import NearbyIdentity

/// Trust on first use for LocalSend senders: the fingerprint an alias came with when its first
/// transfer was accepted, one `fingerprint alias` line each in `$NEARBY_HOME/localsend_known`. A
/// known alias that comes with another fingerprint is refused loudly. This is weaker than nearby's
/// pinning: a LocalSend sender's fingerprint is a claim in its request (senders show no
/// certificate), so it catches a careless impostor, not a careful one (docs/security.md).
package final class LocalSendKnownDevices: Sendable {
    package let path: String
    private let pins = Mutex<[String: String]?>(nil)
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

    /// Nil when the alias is new or came with this fingerprint before; else the sentence to show.
    package func check(alias: String, fingerprint: String) -> String? {
        pins.withLock { pins in
            guard let pinned = loaded(&pins)[alias], pinned != fingerprint.uppercased() else { return nil }
            return "LOCALSEND FINGERPRINT CHANGED: '\(alias)' came with fingerprint \(pinned) before and \(fingerprint.uppercased()) now; someone may be using its name. If that device really was reinstalled, remove its line from \(path)"
        }
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
