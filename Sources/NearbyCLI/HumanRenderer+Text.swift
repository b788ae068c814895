import Foundation
import NearbyCore
import NearbyBase

/// The pieces of lines for people, each made safe for a terminal (`TerminalText.escaped`: the one
/// sanitizer) and cut to a length.
enum Text {
    /// `text` safe to show on a terminal, at most `limit` characters.
    static func clean(_ text: String, limit: Int = 200) -> String { TerminalText.escaped(text, limit: limit) }

    static func id(_ peer: PeerRef) -> String { clean(peer.id, limit: 40) }

    /// The display name, else the ID.
    static func label(_ peer: PeerRef) -> String { peer.name.map { clean($0, limit: 63) } ?? id(peer) }

    /// `sent`'s list of peers.
    static func peers(_ peers: [PeerRef]) -> String {
        let all = peers.map(label)
        if all.count > 5 { return all.prefix(5).joined(separator: ", ") + " and \(all.count - 5) more" }
        return all.isEmpty ? "nobody" : all.joined(separator: ", ")
    }

    static func list(_ items: [String]) -> String { items.map { clean($0) }.joined(separator: ", ") }

    /// ` {k=v, …}` for a non-empty discovery info.
    static func info(_ info: SortedInfo) -> String { pairs(info.values, open: " {", close: "}", separator: ", ") }

    /// `k=v` pairs, keys sorted, at most 8 of them.
    static func pairs(_ values: [String: String], open: String, close: String, separator: String) -> String {
        guard !values.isEmpty else { return "" }
        let pairs = values.keys.sorted().prefix(8).map { "\(clean($0, limit: 40))=\(clean(values[$0] ?? "", limit: 60))" }
        return open + pairs.joined(separator: separator) + (values.count > 8 ? separator + "…" : "") + close
    }

    /// " at host:port [addresses]", as far as the event knows them.
    static func location(host: String?, port: Int?, addresses: [String]) -> String {
        var text = ""
        if let host { text += " at " + clean(host) + (port.map { ":\($0)" } ?? "") }
        if !addresses.isEmpty { text += " [" + addresses.prefix(3).map { clean($0) }.joined(separator: ", ") + (addresses.count > 3 ? ", …" : "") + "]" }
        return text
    }

    /// A warning when the session is (or would be) in plaintext.
    static func unencrypted(_ encrypted: Bool) -> String { encrypted ? "" : " (NOT encrypted)" }

    /// ` "name"` for a named stream.
    static func streamName(_ name: String) -> String { name.isEmpty ? "" : " \"\(clean(name, limit: 60))\"" }

    /// The first `count` characters of a hash-like text, then `…`.
    static func short(_ text: String, _ count: Int) -> String {
        let text = clean(text)
        return text.count > count ? String(text.prefix(count)) + "…" : text
    }
}

/// Sizes, rates and durations the way people read them.
enum Format {
    /// `roundingDown`: the tenth below, for a part of a whole (57.19 MiB done is 57.1, not yet 57.2).
    static func size(_ bytes: Double, roundingDown: Bool = false) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = bytes.isFinite ? max(bytes, 0) : 0
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if roundingDown { value = (value * 10).rounded(.down) / 10 }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func seconds(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "? s" }
        if seconds < 10 { return String(format: "%.2f s", seconds) }
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds)
        return whole < 3600 ? "\(whole / 60) min \(whole % 60) s" : "\(whole / 3600) h \(whole % 3600 / 60) min"
    }
}

extension HumanRenderer {
    /// What an invitation offers, in words: `3 files, 1.8 MiB: a.txt, b.txt, c.txt` or
    /// `the stream "backup"` (names from a peer, cleaned).
    static func offered(_ offer: Offer) -> String {
        var parts: [String] = []
        if let files = offer.files {
            let names = (offer.names ?? []).map { Text.clean($0, limit: 80) }
            let more = files > names.count && !names.isEmpty ? ", …" : ""
            parts.append("\(files) file\(files == 1 ? "" : "s"), \(Format.size(Double(offer.bytes ?? 0)))"
                + (names.isEmpty ? "" : ": " + names.joined(separator: ", ") + more))
        }
        if let stream = offer.stream { parts.append("the stream \"\(Text.clean(stream, limit: 80))\"") }
        return parts.isEmpty ? "nothing named" : parts.joined(separator: "; ")
    }
}
