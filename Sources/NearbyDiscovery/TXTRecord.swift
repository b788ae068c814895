import NearbyBase
/// The MPC-compatible TXT record: `_d=<display name>`, the user's discovery info (keys that start with
/// `_` get one more `_`, as MPC does), and our protocol key `_nb`, by which nearby nodes tell each
/// other apart from plain MPC apps.
package struct TXTRecord: Equatable, Sendable {
    package static let displayNameKey = "_d"
    package static let protocolKey = "_nb"
    package static let protocolVersion = "2"
    /// Each `key=value` entry: a DNS character-string holds at most 255 bytes.
    package static let maxEntryBytes = 255
    /// The whole record on the wire (entries with their length bytes), as MPC limits discovery info.
    package static let maxRecordBytes = 400

    package var displayName: String?
    /// The user's discovery info, keys unescaped.
    package var info: [String: String]
    /// `_nb`'s value when the publisher is a nearby node, nil for a plain MPC app.
    package var protocolVersion: String?
    /// Every entry as published, keys as given (the first of a repeated key wins, RFC 6763 6.4);
    /// what `browse` shows for a service type that is not nearby's.
    package var raw: [String: String] = [:]

    /// Two records are the same when they say the same to nearby and MPC; `raw` is what one was
    /// decoded from, not part of its meaning (a record built here has none).
    package static func == (lhs: TXTRecord, rhs: TXTRecord) -> Bool {
        lhs.displayName == rhs.displayName && lhs.info == rhs.info && lhs.protocolVersion == rhs.protocolVersion
    }

    package init(displayName: String?, info: [String: String], protocolVersion: String?) {
        self.displayName = displayName
        self.info = info
        self.protocolVersion = protocolVersion
    }

    /// Parses `KEY=VALUE` arguments as given on the command line.
    package static func parseInfo(_ pairs: [String]) throws(NearbyError) -> [String: String] {
        var info: [String: String] = [:]
        for pair in pairs {
            guard let eq = pair.firstIndex(of: "=") else {
                throw .invalidDiscoveryInfo(pair, rule: "expected KEY=VALUE")
            }
            let key = String(pair[..<eq])
            let value = String(pair[pair.index(after: eq)...])
            guard !key.isEmpty else { throw .invalidDiscoveryInfo(pair, rule: "the key must not be empty") }
            guard info[key] == nil else { throw .invalidDiscoveryInfo(pair, rule: "the key '\(key)' is given twice") }
            info[key] = value
        }
        return info
    }

    /// The entries in publishing order: `_d`, then user keys sorted, then `_nb`.
    package func entries() -> [(key: String, value: String)] {
        var out: [(String, String)] = []
        if let displayName { out.append((Self.displayNameKey, displayName)) }
        for key in info.keys.sorted() {
            out.append((key.hasPrefix("_") ? "_" + key : key, info[key] ?? ""))
        }
        if let protocolVersion { out.append((Self.protocolKey, protocolVersion)) }
        return out
    }

    /// Checks the limits and returns the wire form (length-prefixed character-strings).
    package func encode() throws(NearbyError) -> [UInt8] {
        var wire: [UInt8] = []
        for (key, value) in entries() {
            let entry = "\(key)=\(value)"
            guard !key.contains("=") else {
                throw .invalidDiscoveryInfo(entry, rule: "keys must not contain '='")
            }
            let bytes = Array(entry.utf8)
            guard bytes.count <= Self.maxEntryBytes else {
                throw .invalidDiscoveryInfo(
                    String(entry.prefix(40)) + (entry.count > 40 ? "…" : ""),
                    rule: "'key=value' is \(bytes.count) bytes; each entry may have at most \(Self.maxEntryBytes)")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        guard wire.count <= Self.maxRecordBytes else {
            throw .invalidDiscoveryInfo(
                "\(info.count) keys",
                rule: "the TXT record would be \(wire.count) bytes; the limit is \(Self.maxRecordBytes) including the display name")
        }
        return wire
    }

    /// Reads a TXT record from the network. Untrusted: malformed strings are skipped, not trusted.
    package static func decode(_ bytes: some Collection<UInt8>) -> TXTRecord {
        var record = TXTRecord(displayName: nil, info: [:], protocolVersion: nil)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let length = Int(bytes[index])
            index = bytes.index(after: index)
            guard let end = bytes.index(index, offsetBy: length, limitedBy: bytes.endIndex) else { break }
            let entry = bytes[index..<end]
            index = end
            guard !entry.isEmpty else { continue }
            let key: String
            let value: String
            if let eq = entry.firstIndex(of: UInt8(ascii: "=")) {
                key = String(decoding: entry[..<eq], as: UTF8.self)
                value = String(decoding: entry[entry.index(after: eq)...], as: UTF8.self)
            } else {
                key = String(decoding: entry, as: UTF8.self)  // a boolean attribute: present, no value
                value = ""
            }
            if record.raw[key] == nil { record.raw[key] = value }
            switch key {
            case displayNameKey: record.displayName = value
            case protocolKey: record.protocolVersion = value
            case _ where key.hasPrefix("__"): record.info[String(key.dropFirst())] = value
            case _ where key.hasPrefix("_"): continue  // reserved by MPC or by us: not the user's info
            default: record.info[key] = value
            }
        }
        return record
    }
}
