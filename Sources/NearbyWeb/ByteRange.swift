/// A `Range: bytes=…` header against a body of `size` bytes (RFC 9110 §14): one range only, which
/// is what a browser or a phone's download manager sends to resume. Pure.
enum ByteRange: Equatable, Sendable {
    /// No Range header, or one we ignore (another unit, several ranges): the whole body, 200.
    case whole
    /// Bytes `lower..<upper`, 206.
    case part(lower: UInt64, upper: UInt64)
    /// Cannot be satisfied: 416 with `Content-Range: bytes */SIZE`.
    case unsatisfiable

    package static func parse(_ header: String?, size: UInt64) -> ByteRange {
        guard let header, header.utf8.count <= 200 else { return .whole }
        let trimmed = header.trimmingSpaces
        guard trimmed.hasPrefix("bytes=") else { return .whole }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(",") else { return .whole }
        let pieces = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return .unsatisfiable }
        let first = pieces[0].trimmingSpaces, last = pieces[1].trimmingSpaces
        guard digitsOnly(first), digitsOnly(last) else { return .unsatisfiable }
        if first.isEmpty {
            // The last N bytes (more digits than a UInt64 holds: all of them).
            guard let suffix = number(last), suffix > 0 else { return .unsatisfiable }
            guard size > 0 else { return .unsatisfiable }
            return .part(lower: size - min(suffix, size), upper: size)
        }
        guard let lower = number(first), lower < size else { return .unsatisfiable }
        if last.isEmpty { return .part(lower: lower, upper: size) }
        // An end past the body (however many digits) is the body's end (RFC 9110 §14.1.2).
        guard let end = number(last), end >= lower else { return .unsatisfiable }
        return .part(lower: lower, upper: min(end, size - 1) + 1)
    }

    /// RFC 9110's `1*DIGIT` (no sign, no space), or empty.
    static func digitsOnly(_ text: String) -> Bool { text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }

    /// Digits as a number, `UInt64.max` when there are more than it holds; nil when empty.
    static func number(_ digits: String) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        return UInt64(digits) ?? UInt64.max
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
