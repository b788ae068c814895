/// Reads a DNS message with every length checked against what is left. Names follow compression
/// pointers (RFC 1035 §4.1.4) only backwards and at most `maxPointerHops` times, so a loop or a
/// pointer past the end is an error, never a hang.
struct DNSReader: Sendable {
    package static let maxPointerHops = 32
    package let bytes: [UInt8]
    package private(set) var offset: Int

    package init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    package var remaining: Int { bytes.count - offset }

    mutating func take(_ count: Int, _ what: String) throws(DNSError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else {
            throw .malformed("\(what): needs \(count) bytes, \(remaining) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8(_ what: String) throws(DNSError) -> UInt8 { try take(1, what).first ?? 0 }

    mutating func u16(_ what: String) throws(DNSError) -> UInt16 {
        let b = try take(2, what)
        return UInt16(b[b.startIndex]) << 8 | UInt16(b[b.startIndex + 1])
    }

    mutating func u32(_ what: String) throws(DNSError) -> UInt32 {
        let b = try take(4, what)
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u48(_ what: String) throws(DNSError) -> UInt64 {
        try take(6, what).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A possibly compressed name.
    mutating func name(_ what: String) throws(DNSError) -> DNSName {
        var labels: [[UInt8]] = []
        var position = offset
        var hops = 0
        var resume: Int?  // where the reader continues once the name has been followed
        var wireLength = 1
        while true {
            guard position < bytes.count else { throw .malformed("\(what): name runs past the end") }
            let length = Int(bytes[position])
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    offset = resume ?? position + 1
                    return try DNSName(labels: labels)
                }
                guard position + 1 + length <= bytes.count else {
                    throw .malformed("\(what): label runs past the end")
                }
                wireLength += 1 + length
                guard wireLength <= DNSName.maxWireBytes else { throw .malformed("\(what): name over 255 bytes") }
                labels.append(Array(bytes[position + 1...position + length]))
                position += 1 + length
            case 0xC0:
                guard position + 1 < bytes.count else { throw .malformed("\(what): pointer runs past the end") }
                let target = (length & 0x3F) << 8 | Int(bytes[position + 1])
                hops += 1
                guard hops <= Self.maxPointerHops else { throw .malformed("\(what): compression loop") }
                guard target < position else { throw .malformed("\(what): compression pointer does not point back") }
                if resume == nil { resume = position + 2 }
                position = target
            default:
                throw .malformed("\(what): unknown label type 0x\(String(length, radix: 16))")
            }
        }
    }
}

/// Writes a DNS message, compressing names against those already written (when allowed).
struct DNSWriter: Sendable {
    package private(set) var bytes: [UInt8] = []
    /// Offsets of name suffixes already written, keyed by their lowercased labels.
    private var suffixes: [[[UInt8]]: Int] = [:]
    package let compress: Bool

    package init(compress: Bool = true) { self.compress = compress }

    package mutating func u8(_ value: UInt8) { bytes.append(value) }
    package mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xFF)) }
    package mutating func u32(_ value: UInt32) { for shift in [24, 16, 8, 0] { bytes.append(UInt8(value >> UInt32(shift) & 0xFF)) } }
    package mutating func u48(_ value: UInt64) { for shift in [40, 32, 24, 16, 8, 0] { bytes.append(UInt8(value >> UInt64(shift) & 0xFF)) } }
    package mutating func raw(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Writes `name`, ending with a pointer to an earlier copy of its longest known suffix.
    package mutating func name(_ name: DNSName, compressible: Bool = true) {
        let labels = name.labels
        for index in labels.indices {
            let key = labels[index...].map { $0.map(DNSName.lower) }
            if compress, compressible, let target = suffixes[key] {
                u16(0xC000 | UInt16(target))
                return
            }
            if compress, compressible, bytes.count < 0x4000 { suffixes[key] = bytes.count }
            u8(UInt8(labels[index].count))
            raw(labels[index])
        }
        u8(0)
    }

    /// Overwrites a 16-bit value at `offset` (RDLENGTH once the RDATA is known, counts).
    package mutating func patch16(at offset: Int, _ value: UInt16) {
        bytes[offset] = UInt8(value >> 8)
        bytes[offset + 1] = UInt8(value & 0xFF)
    }
}
