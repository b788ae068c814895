import Foundation

/// What a pcap reader reads from: a file, or bytes in memory (tests).
package protocol PcapSource {
    /// Up to `count` bytes; fewer only at the end.
    mutating func read(upTo count: Int) throws -> [UInt8]
}

/// Bytes in memory as a pcap source.
package struct PcapBytes: PcapSource {
    private let bytes: [UInt8]
    private var offset = 0
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package mutating func read(upTo count: Int) throws -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

/// A file as a pcap source, read as it goes (a capture of any size in bounded memory).
package struct PcapFile: PcapSource {
    private let handle: FileHandle
    package init(path: String) throws { handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)) }
    package mutating func read(upTo count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            guard let data = try handle.read(upToCount: count - out.count), !data.isEmpty else { break }
            out += data
        }
        return out
    }
    package func close() { try? handle.close() }
}

/// Why a file is not a capture watch can read.
package struct PcapError: Error, Equatable, Sendable {
    package var reason: String
}

/// One captured frame of a pcap file.
package struct PcapFrame: Sendable, Equatable {
    /// Seconds since 1970, as the file says.
    package var time: Double
    package var bytes: [UInt8]
}

/// The classic libpcap file format (tcpdump's `-w`): both byte orders, microsecond and nanosecond
/// timestamps. Every length in the file is checked before anything is read: a record may not claim
/// more than `maxRecordBytes`, and a file that ends inside a record is said to be cut short.
package struct PcapReader<Source: PcapSource> {
    package static var maxRecordBytes: Int { 262_144 }

    private var source: Source
    private let swapped: Bool
    private let nanoseconds: Bool
    package let link: LinkType

    package init(_ source: Source) throws(PcapError) {
        self.source = source
        let header = try Self.read(&self.source, 24, what: "the file header", atStart: true)
        let magic = UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3])
        let swapped: Bool, nanoseconds: Bool
        switch magic {
        case 0xA1B2_C3D4: swapped = false; nanoseconds = false
        case 0xD4C3_B2A1: swapped = true; nanoseconds = false
        case 0xA1B2_3C4D: swapped = false; nanoseconds = true
        case 0x4D3C_B2A1: swapped = true; nanoseconds = true
        case 0x0A0D_0D0A:
            throw PcapError(reason: "it is a pcapng file; watch reads classic pcap (convert it: `tcpdump -r FILE -w FILE.pcap`, or `editcap -F pcap`)")
        default:
            throw PcapError(reason: "it is not a pcap file (magic number 0x\(String(magic, radix: 16)))")
        }
        let major = Self.u16(header, 4, swapped: swapped)
        guard major == 2 else { throw PcapError(reason: "pcap version \(major) is not 2") }
        let network = Self.u32(header, 20, swapped: swapped) & 0xFFFF
        guard let link = LinkType(rawValue: network) else {
            throw PcapError(reason: "its link type \(network) is not one watch reads (Ethernet 1, raw IP 101, Linux cooked 113 and 276)")
        }
        self.link = link
        self.swapped = swapped
        self.nanoseconds = nanoseconds
    }

    /// The next frame; nil at the end of the file.
    package mutating func next() throws(PcapError) -> PcapFrame? {
        let header = try Self.read(&source, 16, what: "a record header", atStart: true)
        guard !header.isEmpty else { return nil }
        let seconds = Double(Self.u32(header, 0, swapped: swapped))
        let fraction = Double(Self.u32(header, 4, swapped: swapped)) / (nanoseconds ? 1e9 : 1e6)
        let length = Int(Self.u32(header, 8, swapped: swapped))
        guard length <= Self.maxRecordBytes else {
            throw PcapError(reason: "a record claims \(length) bytes, over \(Self.maxRecordBytes): the file is damaged")
        }
        let bytes = try Self.read(&source, length, what: "a record of \(length) bytes", atStart: false)
        return PcapFrame(time: seconds + fraction, bytes: bytes)
    }

    /// Exactly `count` bytes; none at all is allowed where a new record may begin (the end).
    private static func read(_ source: inout Source, _ count: Int, what: String, atStart: Bool) throws(PcapError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try source.read(upTo: count)
        } catch {
            throw PcapError(reason: "it cannot be read (\(error.localizedDescription))")
        }
        if bytes.isEmpty, atStart, count == 16 { return [] }
        guard bytes.count == count else { throw PcapError(reason: "it ends inside \(what): the capture was cut short") }
        return bytes
    }

    private static func u16(_ bytes: [UInt8], _ offset: Int, swapped: Bool) -> UInt16 {
        let (a, b) = (UInt16(bytes[offset]), UInt16(bytes[offset + 1]))
        return swapped ? b << 8 | a : a << 8 | b
    }

    private static func u32(_ bytes: [UInt8], _ offset: Int, swapped: Bool) -> UInt32 {
        let value = (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
        return swapped ? value.byteSwapped : value
    }
}
