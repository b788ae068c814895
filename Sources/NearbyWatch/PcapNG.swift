import Foundation

/// pcapng (draft-ietf-opsawg-pcapng), what Wireshark writes by default and macOS and Windows
/// captures are: sections in either byte order, interfaces each with its link type and timestamp
/// resolution, and packets in enhanced or simple packet blocks. Other blocks are skipped. Every
/// block's length is checked before it is read (at most `PcapReader.maxRecordBytes` and a little);
/// at most `maxInterfaces` interfaces; a packet of an interface whose link type watch does not
/// read is skipped.
struct PcapNG {
    static let maxInterfaces = 256
    static let maxBlock = 262_144 + 512

    struct Interface {
        var link: LinkType?
        /// Timestamp units in a second (if_tsresol; 10⁶ unless the interface says).
        var units: Double
    }

    private(set) var swapped: Bool
    private(set) var interfaces: [Interface] = []

    /// The section header block, whose first 24 bytes (type, length, byte-order magic, version,
    /// section length) are `header`; the rest of it is read and skipped.
    init<Source: PcapSource>(header: [UInt8], source: inout Source) throws(PcapError) {
        let magic = PcapReader<Source>.u32(header, 8, swapped: false)
        switch magic {
        case 0x1A2B_3C4D: swapped = false
        case 0x4D3C_2B1A: swapped = true
        default: throw PcapError(reason: "it is a pcapng file with a damaged section header (byte-order magic 0x\(String(magic, radix: 16)))")
        }
        let major = PcapReader<Source>.u16(header, 12, swapped: swapped)
        guard major == 1 else { throw PcapError(reason: "pcapng version \(major) is not 1") }
        let length = Int(PcapReader<Source>.u32(header, 4, swapped: swapped))
        guard length >= 28, length % 4 == 0, length <= Self.maxBlock else {
            throw PcapError(reason: "its section header claims \(length) bytes: the file is damaged")
        }
        _ = try PcapReader<Source>.read(&source, length - 24, what: "the section header", atStart: false)
    }

    /// The next packet; nil at the end of the file.
    mutating func next<Source: PcapSource>(_ source: inout Source) throws(PcapError) -> PcapFrame? {
        while true {
            let head = try PcapReader<Source>.read(&source, 8, what: "a block header", atStart: true)
            guard !head.isEmpty else { return nil }
            let type = u32(head, 0)
            if type == 0x0A0D_0D0A {  // a new section: its own byte order and interfaces
                let rest = try PcapReader<Source>.read(&source, 16, what: "a section header", atStart: false)
                self = try PcapNG(header: head + rest, source: &source)
                continue
            }
            let length = Int(u32(head, 4))
            guard length >= 12, length % 4 == 0, length <= Self.maxBlock else {
                throw PcapError(reason: "a block claims \(length) bytes: the file is damaged")
            }
            let body = try PcapReader<Source>.read(&source, length - 8, what: "a block of \(length) bytes", atStart: false)
            let content = Array(body.dropLast(4))
            switch type {
            case 1: try describe(content)
            case 6: if let frame = try enhanced(content) { return frame }
            case 3: if let frame = simple(content) { return frame }
            default: continue
            }
        }
    }

    /// An interface description block: link type, and if_tsresol among its options.
    private mutating func describe(_ body: [UInt8]) throws(PcapError) {
        guard body.count >= 8 else { throw PcapError(reason: "an interface description is cut short: the file is damaged") }
        guard interfaces.count < Self.maxInterfaces else { throw PcapError(reason: "it describes more than \(Self.maxInterfaces) interfaces") }
        var interface = Interface(link: LinkType(rawValue: UInt32(u16(body, 0))), units: 1e6)
        var offset = 8
        while offset + 4 <= body.count {
            let code = u16(body, offset), length = Int(u16(body, offset + 2))
            guard code != 0, offset + 4 + length <= body.count else { break }
            if code == 9, length >= 1 {
                let value = body[offset + 4]
                let exponent = Double(value & 0x7F)
                interface.units = value & 0x80 == 0 ? pow(10, min(exponent, 18)) : Double(sign: .plus, exponent: Int(min(exponent, 63)), significand: 1)
            }
            offset += 4 + (length + 3) / 4 * 4
        }
        interfaces.append(interface)
    }

    /// An enhanced packet block: interface, timestamp, the captured bytes.
    private func enhanced(_ body: [UInt8]) throws(PcapError) -> PcapFrame? {
        guard body.count >= 20 else { throw PcapError(reason: "a packet block is cut short: the file is damaged") }
        let index = Int(u32(body, 0)), captured = Int(u32(body, 12))
        guard index < interfaces.count else { throw PcapError(reason: "a packet names interface \(index), which the file never described") }
        guard captured <= body.count - 20 else { throw PcapError(reason: "a packet claims \(captured) bytes, more than its block holds: the file is damaged") }
        guard let link = interfaces[index].link else { return nil }
        let stamp = UInt64(u32(body, 4)) << 32 | UInt64(u32(body, 8))
        return PcapFrame(time: Double(stamp) / interfaces[index].units, bytes: Array(body[20..<20 + captured]), link: link)
    }

    /// A simple packet block: interface 0, no timestamp.
    private func simple(_ body: [UInt8]) -> PcapFrame? {
        guard body.count >= 4, let link = interfaces.first?.link else { return nil }
        let original = Int(u32(body, 0))
        return PcapFrame(time: 0, bytes: Array(body[4..<4 + min(original, body.count - 4)]), link: link)
    }

    private func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 { PcapReader<PcapBytes>.u16(bytes, offset, swapped: swapped) }
    private func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 { PcapReader<PcapBytes>.u32(bytes, offset, swapped: swapped) }
}
