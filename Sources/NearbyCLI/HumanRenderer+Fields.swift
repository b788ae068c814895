import Foundation
import NearbyCore

/// Typed, forgiving access to one decoded event: a missing or mistyped field reads as empty, so a
/// line from a newer or older node still renders.
struct Fields {
    let object: [String: Any]
    let timeZone: TimeZone

    init(_ object: [String: Any], timeZone: TimeZone = .current) {
        self.object = object
        self.timeZone = timeZone
    }

    func has(_ key: String) -> Bool { object[key].map { !($0 is NSNull) } ?? false }

    func string(_ key: String) -> String { object[key] as? String ?? "" }

    func optionalString(_ key: String) -> String? { object[key] as? String }

    /// The field as text safe to show on a terminal, at most `limit` characters.
    func clean(_ key: String, limit: Int = 200) -> String { Self.cleaned(string(key), limit: limit) }

    func double(_ key: String) -> Double {
        switch object[key] {
        case let number as NSNumber: number.doubleValue
        case let int as Int: Double(int)
        case let double as Double: double
        default: 0
        }
    }

    func int(_ key: String) -> Int {
        let value = double(key)
        return value.isFinite && abs(value) < 1e15 ? Int(value) : 0
    }

    func bool(_ key: String) -> Bool { object[key] as? Bool ?? (object[key] as? NSNumber)?.boolValue ?? false }

    func strings(_ key: String) -> [String] { (object[key] as? [Any])?.compactMap { $0 as? String } ?? [] }

    func list(_ key: String) -> String { strings(key).map { Self.cleaned($0) }.joined(separator: ", ") }

    /// A string, number or boolean field as text; nil for objects, arrays and null.
    func scalar(_ key: String) -> String? {
        switch object[key] {
        case let string as String: Self.cleaned(string, limit: 80)
        case let bool as Bool: String(bool)
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    // MARK: peers

    private var peer: [String: Any]? { object["peer"] as? [String: Any] }
    var hasPeer: Bool { peer != nil }
    /// The display name as sent (for commands the person can type back), nil when unknown.
    var peerName: String? { peer?["name"] as? String }
    var peerID: String { Self.cleaned(peer?["id"] as? String ?? "?", limit: 40) }
    /// The display name, else the ID.
    var peerLabel: String { peerName.map { Self.cleaned($0, limit: 63) } ?? peerID }

    /// `sent`'s list of peers.
    var peers: String {
        let all = (object["peers"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }.map { peer in
            (peer["name"] as? String).map { Self.cleaned($0, limit: 63) } ?? Self.cleaned(peer["id"] as? String ?? "?", limit: 40)
        }
        if all.count > 5 { return all.prefix(5).joined(separator: ", ") + " and \(all.count - 5) more" }
        return all.isEmpty ? "nobody" : all.joined(separator: ", ")
    }

    // MARK: pieces of lines

    /// ` {k=v, …}` for a non-empty discovery info.
    var info: String {
        guard let info = object["info"] as? [String: Any], !info.isEmpty else { return "" }
        let pairs = info.keys.sorted().prefix(8).map { "\(Self.cleaned($0, limit: 40))=\(Self.cleaned(info[$0] as? String ?? "", limit: 60))" }
        return " {" + pairs.joined(separator: ", ") + (info.count > 8 ? ", …" : "") + "}"
    }

    /// A warning when the session is (or would be) in plaintext.
    var unencrypted: String { has("encrypted") && !bool("encrypted") ? " (NOT encrypted)" : "" }

    /// ` "name"` for a named stream.
    var streamName: String {
        let name = clean("name", limit: 60)
        return name.isEmpty ? "" : " \"\(name)\""
    }

    /// The first `count` characters of a hash-like field, then `…`.
    func short(_ key: String, _ count: Int) -> String {
        let text = clean(key)
        return text.count > count ? String(text.prefix(count)) + "…" : text
    }

    /// The RFC 3339 field as a wall-clock time (`21:20:23`) in `timeZone`; as given when unreadable.
    func clock(_ key: String, in zone: TimeZone? = nil) -> String {
        guard let date = Self.date(string(key)) else { return clean(key, limit: 30) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone ?? timeZone
        let parts = calendar.dateComponents([.hour, .minute, .second], from: date)
        return String(format: "%02d:%02d:%02d", parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }

    /// Whole seconds from the event's `time` to the RFC 3339 field `key`.
    func secondsUntil(_ key: String) -> Int? {
        guard let then = Self.date(string(key)), let now = Self.date(string("time")) else { return nil }
        return max(0, Int((then.timeIntervalSince(now)).rounded()))
    }

    static func date(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    /// `text` safe to show on a terminal, cut to `limit` characters: the one sanitizer,
    /// `TerminalText.escaped`.
    static func cleaned(_ text: String, limit: Int = 200) -> String { TerminalText.escaped(text, limit: limit) }
}

/// Sizes, rates and durations the way people read them.
enum Format {
    static func size(_ bytes: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = bytes.isFinite ? max(bytes, 0) : 0
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
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
