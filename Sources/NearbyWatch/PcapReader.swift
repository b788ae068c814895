import Foundation
#if canImport(Glibc)
import Glibc
#endif

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

/// A file as a pcap source, read as it goes (a capture of any size in bounded memory). Opened
/// and read without blocking, waiting in poll(2) turns of 200 ms: a FIFO with no writer yet, or a
/// pipe from a program that writes nothing (`sleep 20 | nearby watch --read /dev/stdin`), ends as
/// soon as `cancelled` says so (Ctrl-C, SIGTERM, --timeout), with `PcapCancelled`.
package struct PcapFile: PcapSource {
    private let fd: Int32
    private let isFIFO: Bool
    private let cancelled: @Sendable () -> Bool

    package init(path: String, cancelled: @escaping @Sendable () -> Bool = { false }) throws(PcapError) {
        let opened = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard opened >= 0 else {
            let code = errno
            throw PcapError(reason: code == ENOENT ? "there is no such file" : String(cString: strerror(code)).lowercased())
        }
        fd = opened
        self.cancelled = cancelled
        var status = stat()
        isFIFO = fstat(opened, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO
    }

    package mutating func read(upTo count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, count))
        var filled = 0
        while filled < out.count {
            if cancelled() { throw PcapCancelled() }
            let got = out.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress.map { $0 + filled }, count - filled) }
            if got > 0 { filled += got; continue }
            if got == 0 {
                // A FIFO reads as ended while no writer has opened it yet: the end is a hang-up.
                guard isFIFO else { break }
                var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&waiting, 1, 200) > 0, waiting.revents & Int16(POLLHUP) != 0, waiting.revents & Int16(POLLIN) == 0 { break }
                continue
            }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK || code == EINTR else {
                throw PcapError(reason: String(cString: strerror(code)).lowercased())
            }
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&waiting, 1, 200)
        }
        return Array(out.prefix(filled))
    }

    package func close() { _ = systemClose(fd) }
}

/// Reading stopped because watching was told to end.
package struct PcapCancelled: Error {}

/// Why a file is not a capture watch can read.
package struct PcapError: Error, Equatable, Sendable {
    package var reason: String
    /// The reason when reading stopped because watching was told to end (not the file's fault).
    package static let cancelled = "reading was cancelled"
    package var isCancellation: Bool { reason == Self.cancelled }
}

/// One captured frame of a pcap file.
package struct PcapFrame: Sendable, Equatable {
    /// Seconds since 1970, as the file says.
    package var time: Double
    package var bytes: [UInt8]
    /// How it begins: the file's link type (pcapng: its interface's).
    package var link: LinkType = .ethernet
}

/// The classic libpcap file format (tcpdump's `-w`): both byte orders, microsecond and nanosecond
/// timestamps; and pcapng (Wireshark's, macOS's and Windows' captures: `PcapNG`). Every length in the file is checked before anything is read: a record may not claim
/// more than `maxRecordBytes`, and a file that ends inside a record is said to be cut short.
package struct PcapReader<Source: PcapSource> {
    package static var maxRecordBytes: Int { 262_144 }

    var source: Source
    private let swapped: Bool
    private let nanoseconds: Bool
    /// The file's link type (pcapng: its first interface's, once one is described).
    package private(set) var link: LinkType
    var ng: PcapNG?

    package init(_ source: Source) throws(PcapError) {
        self.source = source
        let header = try Self.read(&self.source, 24, what: "the file header", atStart: false)
        let magic = UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3])
        let swapped: Bool, nanoseconds: Bool
        switch magic {
        case 0xA1B2_C3D4: swapped = false; nanoseconds = false
        case 0xD4C3_B2A1: swapped = true; nanoseconds = false
        case 0xA1B2_3C4D: swapped = false; nanoseconds = true
        case 0x4D3C_B2A1: swapped = true; nanoseconds = true
        case 0x0A0D_0D0A:
            let ng = try PcapNG(header: header, source: &self.source)
            self.ng = ng
            self.swapped = ng.swapped
            self.nanoseconds = false
            self.link = .ethernet
            return
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
        if var ng {
            defer { self.ng = ng }
            let frame = try ng.next(&source)
            if let first = ng.interfaces.first?.link { link = first }
            return frame
        }
        let header = try Self.read(&source, 16, what: "a record header", atStart: true)
        guard !header.isEmpty else { return nil }
        let seconds = Double(Self.u32(header, 0, swapped: swapped))
        let fraction = Double(Self.u32(header, 4, swapped: swapped)) / (nanoseconds ? 1e9 : 1e6)
        let length = Int(Self.u32(header, 8, swapped: swapped))
        guard length <= Self.maxRecordBytes else {
            throw PcapError(reason: "a record claims \(length) bytes, over \(Self.maxRecordBytes): the file is damaged")
        }
        let bytes = try Self.read(&source, length, what: "a record of \(length) bytes", atStart: false)
        return PcapFrame(time: seconds + fraction, bytes: bytes, link: link)
    }

    /// Exactly `count` bytes; none at all is allowed where a new record may begin (the end).
    static func read(_ source: inout Source, _ count: Int, what: String, atStart: Bool) throws(PcapError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try source.read(upTo: count)
        } catch let error as PcapError {
            throw error
        } catch is PcapCancelled {
            throw PcapError(reason: PcapError.cancelled)
        } catch {
            throw PcapError(reason: "it cannot be read (\(error.localizedDescription))")
        }
        if bytes.isEmpty, atStart { return [] }
        guard bytes.count == count else { throw PcapError(reason: "it ends inside \(what): the capture was cut short") }
        return bytes
    }

    static func u16(_ bytes: [UInt8], _ offset: Int, swapped: Bool) -> UInt16 {
        let (a, b) = (UInt16(bytes[offset]), UInt16(bytes[offset + 1]))
        return swapped ? b << 8 | a : a << 8 | b
    }

    static func u32(_ bytes: [UInt8], _ offset: Int, swapped: Bool) -> UInt32 {
        let value = (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
        return swapped ? value.byteSwapped : value
    }
}

#if canImport(Glibc)
private let systemRead = Glibc.read
private let systemClose = Glibc.close
#else
private let systemRead = Darwin.read
private let systemClose = Darwin.close
#endif
