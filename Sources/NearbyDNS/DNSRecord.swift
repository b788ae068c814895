/// The resource-record types nearby reads and writes (RFC 1035, 2782, 3596, 4034, 8945); others are
/// kept as opaque bytes.
package struct DNSType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let a = DNSType(rawValue: 1)
    package static let soa = DNSType(rawValue: 6)
    package static let hinfo = DNSType(rawValue: 13)
    package static let ptr = DNSType(rawValue: 12)
    package static let txt = DNSType(rawValue: 16)
    package static let aaaa = DNSType(rawValue: 28)
    package static let srv = DNSType(rawValue: 33)
    package static let opt = DNSType(rawValue: 41)
    package static let nsec = DNSType(rawValue: 47)
    package static let tsig = DNSType(rawValue: 250)
    package static let any = DNSType(rawValue: 255)

    package var description: String {
        switch self {
        case .a: "A"
        case .soa: "SOA"
        case .hinfo: "HINFO"
        case .ptr: "PTR"
        case .txt: "TXT"
        case .aaaa: "AAAA"
        case .srv: "SRV"
        case .opt: "OPT"
        case .nsec: "NSEC"
        case .tsig: "TSIG"
        case .any: "ANY"
        default: "TYPE\(rawValue)"
        }
    }
}

/// Record classes: IN, and the two RFC 2136 uses in updates (NONE: delete this record; ANY: delete
/// the whole set, also TSIG's class).
package struct DNSClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }
    package static let `in` = DNSClass(rawValue: 1)
    package static let none = DNSClass(rawValue: 254)
    package static let any = DNSClass(rawValue: 255)

    /// mDNS (RFC 6762 §10.2, §5.4): the top bit of a record's class is the cache-flush bit (this
    /// record replaces the set), of a question's class the unicast-response (QU) bit.
    package var topBit: Bool { rawValue & 0x8000 != 0 }
    /// The class without mDNS's top bit.
    package var base: DNSClass { DNSClass(rawValue: rawValue & 0x7FFF) }

    package var description: String {
        switch base {
        case .in: "IN"
        case .none: "NONE"
        case .any: "ANY"
        default: "CLASS\(base.rawValue)"
        }
    }
}

package struct SOAData: Hashable, Sendable {
    package var primary: DNSName
    package var mailbox: DNSName
    package var serial: UInt32, refresh: UInt32, retry: UInt32, expire: UInt32, minimum: UInt32

    package init(primary: DNSName, mailbox: DNSName, serial: UInt32, refresh: UInt32, retry: UInt32, expire: UInt32, minimum: UInt32) {
        self.primary = primary
        self.mailbox = mailbox
        self.serial = serial
        self.refresh = refresh
        self.retry = retry
        self.expire = expire
        self.minimum = minimum
    }
}

package struct TSIGData: Hashable, Sendable {
    package var algorithm: DNSName
    package var timeSigned: UInt64  // 48 bits
    package var fudge: UInt16
    package var mac: [UInt8]
    package var originalID: UInt16
    package var error: UInt16
    package var other: [UInt8]

    package init(algorithm: DNSName, timeSigned: UInt64, fudge: UInt16, mac: [UInt8], originalID: UInt16, error: UInt16, other: [UInt8]) {
        self.algorithm = algorithm
        self.timeSigned = timeSigned
        self.fudge = fudge
        self.mac = mac
        self.originalID = originalID
        self.error = error
        self.other = other
    }
}

/// A record's data, typed where nearby needs it.
package enum RData: Hashable, Sendable {
    case a([UInt8])                 // 4 bytes
    case aaaa([UInt8])              // 16 bytes
    case ptr(DNSName)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    case txt([[UInt8]])             // character-strings, each ≤ 255 bytes
    case soa(SOAData)
    case tsig(TSIGData)
    /// RFC 4034 §4: the next name and the types present at the owner name (mDNS, RFC 6762 §6.1,
    /// uses it to say which types a name does not have).
    case nsec(next: DNSName, types: [DNSType])
    case unknown([UInt8])
    /// No data: RDLENGTH 0, as in an RFC 2136 "delete an RRset" or "name is in use" entry.
    case empty
}

package struct DNSRecord: Hashable, Sendable {
    package var name: DNSName
    package var type: DNSType
    package var rrClass: DNSClass
    package var ttl: UInt32
    package var data: RData

    package init(name: DNSName, type: DNSType, rrClass: DNSClass = .in, ttl: UInt32, data: RData) {
        self.name = name
        self.type = type
        self.rrClass = rrClass
        self.ttl = ttl
        self.data = data
    }

    package static let maxTXTStringBytes = 255

    func write(to writer: inout DNSWriter) throws(DNSError) {
        writer.name(name)
        writer.u16(type.rawValue)
        writer.u16(rrClass.rawValue)
        writer.u32(ttl)
        let lengthAt = writer.bytes.count
        writer.u16(0)
        let start = writer.bytes.count
        switch data {
        case let .a(bytes):
            guard bytes.count == 4 else { throw .malformed("an A record holds 4 bytes") }
            writer.raw(bytes)
        case let .aaaa(bytes):
            guard bytes.count == 16 else { throw .malformed("an AAAA record holds 16 bytes") }
            writer.raw(bytes)
        case let .ptr(target):
            writer.name(target)
        case let .srv(priority, weight, port, target):
            writer.u16(priority)
            writer.u16(weight)
            writer.u16(port)
            writer.name(target, compressible: false)  // RFC 2782: no compression in SRV targets
        case let .txt(strings):
            for string in strings {
                guard string.count <= Self.maxTXTStringBytes else { throw .malformed("TXT string over 255 bytes") }
                writer.u8(UInt8(string.count))
                writer.raw(string)
            }
            if strings.isEmpty { writer.u8(0) }  // RFC 6763 §6.1: an empty TXT is one empty string
        case let .soa(soa):
            writer.name(soa.primary)
            writer.name(soa.mailbox)
            for value in [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum] { writer.u32(value) }
        case let .tsig(tsig):
            writer.name(tsig.algorithm, compressible: false)
            writer.u48(tsig.timeSigned)
            writer.u16(tsig.fudge)
            writer.u16(UInt16(tsig.mac.count))
            writer.raw(tsig.mac)
            writer.u16(tsig.originalID)
            writer.u16(tsig.error)
            writer.u16(UInt16(tsig.other.count))
            writer.raw(tsig.other)
        case let .nsec(next, types):
            writer.name(next, compressible: false)
            writer.raw(Self.typeBitmaps(types))
        case let .unknown(bytes):
            writer.raw(bytes)
        case .empty:
            break
        }
        let length = writer.bytes.count - start
        guard length <= Int(UInt16.max) else { throw .malformed("RDATA over 65535 bytes") }
        writer.patch16(at: lengthAt, UInt16(length))
    }

    static func read(from reader: inout DNSReader) throws(DNSError) -> DNSRecord {
        let name = try reader.name("record name")
        let type = DNSType(rawValue: try reader.u16("record type"))
        let rrClass = DNSClass(rawValue: try reader.u16("record class"))
        let ttl = try reader.u32("record TTL")
        let length = Int(try reader.u16("RDLENGTH"))
        guard length <= reader.remaining else { throw .malformed("RDLENGTH \(length) past the end") }
        let end = reader.offset + length
        let data: RData
        if length == 0 {
            data = .empty
        } else {
            switch type {
            case .a:
                guard length == 4 else { throw .malformed("A record of \(length) bytes") }
                data = .a(Array(try reader.take(4, "A")))
            case .aaaa:
                guard length == 16 else { throw .malformed("AAAA record of \(length) bytes") }
                data = .aaaa(Array(try reader.take(16, "AAAA")))
            case .ptr:
                data = .ptr(try reader.name("PTR target"))
            case .srv:
                data = .srv(priority: try reader.u16("SRV priority"), weight: try reader.u16("SRV weight"),
                            port: try reader.u16("SRV port"), target: try reader.name("SRV target"))
            case .txt:
                var strings: [[UInt8]] = []
                while reader.offset < end {
                    let count = Int(try reader.u8("TXT length"))
                    guard reader.offset + count <= end else { throw .malformed("TXT string past its record") }
                    strings.append(Array(try reader.take(count, "TXT string")))
                }
                data = .txt(strings)
            case .soa:
                data = .soa(SOAData(
                    primary: try reader.name("SOA primary"), mailbox: try reader.name("SOA mailbox"),
                    serial: try reader.u32("SOA"), refresh: try reader.u32("SOA"), retry: try reader.u32("SOA"),
                    expire: try reader.u32("SOA"), minimum: try reader.u32("SOA")))
            case .tsig:
                let algorithm = try reader.name("TSIG algorithm")
                let time = try reader.u48("TSIG time")
                let fudge = try reader.u16("TSIG fudge")
                let mac = Array(try reader.take(Int(try reader.u16("TSIG MAC size")), "TSIG MAC"))
                let originalID = try reader.u16("TSIG original ID")
                let error = try reader.u16("TSIG error")
                let other = Array(try reader.take(Int(try reader.u16("TSIG other length")), "TSIG other"))
                data = .tsig(TSIGData(algorithm: algorithm, timeSigned: time, fudge: fudge, mac: mac,
                                      originalID: originalID, error: error, other: other))
            case .nsec:
                let next = try reader.name("NSEC next name")
                guard reader.offset <= end else { throw .malformed("NSEC next name past its record") }
                data = .nsec(next: next, types: try Self.types(Array(try reader.take(end - reader.offset, "NSEC bitmaps"))))
            default:
                data = .unknown(Array(try reader.take(length, "RDATA")))
            }
        }
        guard reader.offset == end else { throw .malformed("\(type) RDATA is not \(length) bytes") }
        return DNSRecord(name: name, type: type, rrClass: rrClass, ttl: ttl, data: data)
    }
}

extension DNSRecord {
    /// mDNS: the cache-flush bit of the record's class (RFC 6762 §10.2): a unique record.
    package var cacheFlush: Bool { rrClass.topBit }

    /// RFC 4034 §4.1.2: the types in windows of up to 32 bytes of bits.
    static func typeBitmaps(_ types: [DNSType]) -> [UInt8] {
        var windows: [UInt8: [UInt8]] = [:]
        for type in types {
            let window = UInt8(type.rawValue >> 8), low = Int(type.rawValue & 0xFF)
            var bits = windows[window] ?? []
            if bits.count <= low / 8 { bits += [UInt8](repeating: 0, count: low / 8 + 1 - bits.count) }
            bits[low / 8] |= 0x80 >> UInt8(low % 8)
            windows[window] = bits
        }
        return windows.keys.sorted().flatMap { [$0, UInt8(windows[$0]?.count ?? 0)] + (windows[$0] ?? []) }
    }

    /// The types of NSEC bitmaps; a window out of order, empty or over 32 bytes is malformed.
    static func types(_ bytes: [UInt8]) throws(DNSError) -> [DNSType] {
        var types: [DNSType] = []
        var index = 0
        var last = -1
        while index < bytes.count {
            guard index + 2 <= bytes.count else { throw .malformed("NSEC bitmap header past its record") }
            let window = Int(bytes[index]), count = Int(bytes[index + 1])
            guard window > last, (1...32).contains(count), index + 2 + count <= bytes.count else {
                throw .malformed("NSEC bitmap window \(window) of \(count) bytes")
            }
            last = window
            for offset in 0..<count {
                let byte = bytes[index + 2 + offset]
                for bit in 0..<8 where byte & (0x80 >> UInt8(bit)) != 0 {
                    types.append(DNSType(rawValue: UInt16(window << 8 | offset * 8 + bit)))
                }
            }
            index += 2 + count
        }
        return types
    }
}
