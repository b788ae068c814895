/// A domain name as a list of labels (RFC 1035 §3.1), each a byte string, as miekg/dns and
/// dnspython keep them. The root is the empty list. Every limit is checked when a name is made:
/// a label is 1…63 bytes and the whole name at most 255 bytes on the wire.
package struct DNSName: Hashable, Sendable, CustomStringConvertible {
    package static let maxLabelBytes = 63
    package static let maxWireBytes = 255

    package let labels: [[UInt8]]

    package static let root = DNSName(uncheckedLabels: [])

    init(uncheckedLabels labels: [[UInt8]]) { self.labels = labels }

    /// A name from labels; throws if any label is empty or too long, or the name is too long.
    package init(labels: [[UInt8]]) throws(DNSError) {
        var wire = 1
        for label in labels {
            guard !label.isEmpty else { throw .malformed("empty label") }
            guard label.count <= Self.maxLabelBytes else { throw .malformed("label of \(label.count) bytes") }
            wire += 1 + label.count
        }
        guard wire <= Self.maxWireBytes else { throw .malformed("name of \(wire) bytes") }
        self.labels = labels
    }

    /// A name in presentation form: labels separated by `.`, `\.` and `\\` for a literal dot or
    /// backslash, `\DDD` for any byte. A trailing dot is allowed; `.` alone is the root.
    package init(_ text: String) throws(DNSError) {
        var labels: [[UInt8]] = []
        var label: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        guard text != "." else { self = .root; return }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ".") {
                guard !label.isEmpty else { throw .malformed("empty label in '\(text)'") }
                labels.append(label)
                label = []
            } else if byte == UInt8(ascii: "\\") {
                guard index < bytes.count else { throw .malformed("trailing backslash in '\(text)'") }
                let next = bytes[index]
                if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) {
                    guard index + 3 <= bytes.count else { throw .malformed("bad \\DDD escape in '\(text)'") }
                    var value = 0
                    for digit in bytes[index..<index + 3] {
                        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else {
                            throw .malformed("bad \\DDD escape in '\(text)'")
                        }
                        value = value * 10 + Int(digit - UInt8(ascii: "0"))
                    }
                    guard value <= 255 else { throw .malformed("bad \\DDD escape in '\(text)'") }
                    label.append(UInt8(value))
                    index += 3
                } else {
                    label.append(next)
                    index += 1
                }
            } else {
                label.append(byte)
            }
        }
        if !label.isEmpty { labels.append(label) }
        try self.init(labels: labels)
    }

    /// `label` in front of `self`, e.g. an instance name in front of `_nearby._tcp.example.`.
    package func prepending(_ label: String) throws(DNSError) -> DNSName {
        try DNSName(labels: [Array(label.utf8)] + labels)
    }

    /// `self` followed by `suffix`.
    package func appending(_ suffix: DNSName) throws(DNSError) -> DNSName {
        try DNSName(labels: labels + suffix.labels)
    }

    /// Whether `self` is `other` or below it (case-insensitively).
    package func isSubdomain(of other: DNSName) -> Bool {
        guard labels.count >= other.labels.count else { return false }
        return DNSName(uncheckedLabels: Array(labels.suffix(other.labels.count))) == other
    }

    /// The name with ASCII letters lowered: the canonical form TSIG digests (RFC 4034 §6.2).
    package var lowercased: DNSName {
        DNSName(uncheckedLabels: labels.map { $0.map(Self.lower) })
    }

    /// Uncompressed wire form.
    package var wire: [UInt8] {
        var out: [UInt8] = []
        for label in labels {
            out.append(UInt8(label.count))
            out.append(contentsOf: label)
        }
        out.append(0)
        return out
    }

    /// Presentation form with a trailing dot; dots, backslashes and non-printable bytes escaped.
    package var description: String {
        guard !labels.isEmpty else { return "." }
        return labels.map(Self.escape).joined(separator: ".") + "."
    }

    /// The first label as text (an instance name), undecorated.
    package var firstLabel: String? { labels.first.map { String(decoding: $0, as: UTF8.self) } }

    static func escape(_ label: [UInt8]) -> String {
        DNSPresentation.escape(label, special: [UInt8(ascii: "."), UInt8(ascii: "\\")], printableFrom: 0x21)
    }

    static func lower(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// Names compare case-insensitively in ASCII (RFC 4343).
    package static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        lhs.labels.count == rhs.labels.count
            && zip(lhs.labels, rhs.labels).allSatisfy { a, b in
                a.count == b.count && zip(a, b).allSatisfy { lower($0) == lower($1) }
            }
    }

    package func hash(into hasher: inout Hasher) {
        for label in labels { hasher.combine(label.map(Self.lower)) }
    }
}

/// What goes wrong reading or building a DNS message.
package enum DNSError: Error, Equatable, Sendable {
    /// The bytes are not a well-formed message (truncated, a length past the end, a pointer loop…).
    case malformed(String)
    /// A TSIG record was missing, unknown, or its MAC or time did not check out.
    case tsig(String)
}

/// Bytes in DNS presentation form (RFC 1035 §5.1), as `dig` writes them: each of `special` after a
/// backslash, printable ASCII from `lowest` as it is, any other byte as `\DDD`.
package enum DNSPresentation {
    package static func escape(_ bytes: [UInt8], special: [UInt8], printableFrom lowest: UInt8) -> String {
        var out = ""
        for byte in bytes {
            if special.contains(byte) {
                out += "\\" + String(UnicodeScalar(byte))
            } else if byte >= lowest, byte <= 0x7E {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                let digits = String(byte)
                out += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
            }
        }
        return out
    }
}
