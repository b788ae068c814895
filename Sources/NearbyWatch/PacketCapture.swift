import Foundation
import NearbyBase
#if canImport(Glibc)
import Glibc
#endif

/// A packet socket (AF_PACKET, SOCK_DGRAM: IP packets without their link header) with a classic
/// BPF filter that passes only UDP to or from port 5353, IPv4 and IPv6, on every interface or
/// one. It copies packets: the daemon's own socket gets every one of them as before, which a
/// second socket bound to 5353 would not (unicast goes to one of them). Needs root or CAP_NET_RAW.
package final class PacketCapture {
    /// The most one read takes (an mDNS packet is at most 9000 bytes; a jumbo frame's worth).
    static let maxPacket = 65_536
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: PacketCapture.maxPacket)
    private var names: [Int32: String] = [:]
    private var limits: [String: Int] = [:]
    /// Packets the kernel dropped for want of room in the socket's buffer, so far.
    package private(set) var dropped = 0

    /// Opens the socket on `interface` (nil: every interface).
    package init(interface: String?) throws(NearbyError) {
        #if os(Linux)
        let socketFD = socket(Self.afPacket, Int32(SOCK_DGRAM.rawValue), Int32(Self.ethPAll.bigEndian))
        guard socketFD >= 0 else {
            let code = errno
            if code == EPERM || code == EACCES { throw NearbyError.captureNotPermitted }
            throw NearbyError.ioFailure(path: "packet socket", reason: String(cString: strerror(code)))
        }
        fd = socketFD
        var filter = Self.filter
        let attached = filter.withUnsafeMutableBufferPointer { instructions -> Int32 in
            var program = SocketFilterProgram(length: UInt16(instructions.count), filter: instructions.baseAddress)
            return setsockopt(fd, SOL_SOCKET, Self.soAttachFilter, &program, socklen_t(MemoryLayout<SocketFilterProgram>.size))
        }
        guard attached == 0 else {
            let reason = String(cString: strerror(errno))
            throw NearbyError.ioFailure(path: "packet socket", reason: "its BPF filter was refused: \(reason)")
        }
        var size: Int32 = 4 << 20
        if setsockopt(fd, SOL_SOCKET, 33, &size, 4) != 0 { _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }  // 33: SO_RCVBUFFORCE (root)
        if let interface {
            let index = if_nametoindex(interface)
            guard index > 0 else {
                    throw NearbyError.invalidArgument("there is no interface '\(interface)' here (`ip link` lists them)")
            }
            var address = LinkAddress(family: UInt16(Self.afPacket), protocolNumber: Self.ethPAll.bigEndian, index: Int32(index))
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<LinkAddress>.size)) }
            }
            guard bound == 0 else {
                let reason = String(cString: strerror(errno))
                    throw NearbyError.ioFailure(path: interface, reason: "cannot capture on it: \(reason)")
            }
        }
        #else
        throw NearbyError.invalidArgument("capturing packets needs Linux's packet sockets: read a capture with --read")
        #endif
    }

    deinit { close(fd) }

    /// Waits up to `milliseconds` for packets, then hands each waiting one (at most `limit`) to
    /// `body` with its time and interface index.
    package func receive(waiting milliseconds: Int32, limit: Int = 256, _ body: (Double, Int32, ArraySlice<UInt8>) -> Void) {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, milliseconds) > 0 else { return }
        for _ in 0..<limit {
            var from = LinkAddress(family: 0, protocolNumber: 0, index: 0)
            var length = socklen_t(MemoryLayout<LinkAddress>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
            }
            guard count > 0 else { return }
            body(Date().timeIntervalSince1970, from.index, buffer[0..<min(count, buffer.count)])
        }
    }

    /// The name of interface `index`, asked once.
    package func interfaceName(_ index: Int32) -> String {
        if let name = names[index] { return name }
        var bytes = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        let name = if_indextoname(UInt32(bitPattern: index), &bytes) != nil
            ? String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "if\(index)"
        if names.count < 1024 { names[index] = name }
        return name
    }

    /// The largest UDP payload one frame of `interface` carries (its MTU less IP and UDP headers).
    package func payloadLimit(_ interface: String, ipv6: Bool) -> Int {
        let mtu: Int
        if let known = limits[interface] {
            mtu = known
        } else {
            let text = (try? String(contentsOfFile: "/sys/class/net/\(interface)/mtu", encoding: .utf8)) ?? ""
            mtu = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1500
            if limits.count < 1024 { limits[interface] = mtu }
        }
        return mtu - (ipv6 ? 48 : 28)
    }

    /// Seconds of CPU the calling thread has used (`WatchPace` backs off past half a core).
    package static func threadCPU() -> Double {
        var spec = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec) == 0 else { return 0 }
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Lowers the calling thread to nice `nice` (any user may lower their own), so that beside a
    /// flood the host's daemon, at its usual 0, is scheduled first. On Linux `setpriority` with
    /// PRIO_PROCESS and 0 changes the calling thread only: the capture's, not the process's others.
    package static func yieldToDaemons(nice: Int32 = 10) {
        #if os(Linux)
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        if errno == 0, current < nice { _ = setpriority(which, 0, nice) }
        #endif
    }

    /// Adds what the kernel dropped since the last call to `dropped` (its counters reset when read).
    package func countDrops() {
        var stats = (packets: UInt32(0), drops: UInt32(0))
        var length = socklen_t(MemoryLayout<(UInt32, UInt32)>.size)
        if getsockopt(fd, Self.solPacket, Self.packetStatistics, &stats, &length) == 0 { dropped += Int(stats.drops) }
    }

    static let afPacket: Int32 = 17
    static let ethPAll: UInt16 = 0x0003
    static let soAttachFilter: Int32 = 26
    static let solPacket: Int32 = 263
    static let packetStatistics: Int32 = 6

    /// What the host's kernel would hand its daemon, as the daemon's socket would get it: UDP to or
    /// from 5353 over IPv4 or IPv6, and every IPv4 UDP fragment and IPv6 packet whose first header
    /// is an extension header (hop-by-hop, routing, fragment, destination options) — the ports are
    /// behind them, so `FrameReader` decides (and puts fragments together). The packet's protocol is
    /// read from the socket buffer (SKF_AD_PROTOCOL), its data starting at the IP header.
    static let filter: [FilterInstruction] = [
        .init(0x28, 0, 0, 0xFFFF_F000),  // 0: A = protocol
        .init(0x15, 0, 9, 0x0800),  // 1: IPv4? else 11
        .init(0x30, 0, 0, 9),  // 2: A = IP protocol
        .init(0x15, 0, 18, 17),  // 3: UDP? else reject
        .init(0x28, 0, 0, 6),  // 4: A = flags and fragment offset
        .init(0x45, 17, 0, 0x3FFF),  // 5: a fragment (more, or an offset): accept
        .init(0xB1, 0, 0, 0),  // 6: X = IP header length
        .init(0x48, 0, 0, 0),  // 7: A = source port
        .init(0x15, 14, 0, 5353),  // 8: 5353: accept
        .init(0x48, 0, 0, 2),  // 9: A = destination port
        .init(0x15, 12, 11, 5353),  // 10: 5353: accept, else reject
        .init(0x15, 0, 10, 0x86DD),  // 11: IPv6? else reject
        .init(0x30, 0, 0, 6),  // 12: A = next header
        .init(0x15, 4, 0, 17),  // 13: UDP: 18
        .init(0x15, 8, 0, 0),  // 14: hop-by-hop: accept
        .init(0x15, 7, 0, 60),  // 15: destination options: accept
        .init(0x15, 6, 0, 44),  // 16: fragment: accept
        .init(0x15, 5, 4, 43),  // 17: routing: accept, else reject
        .init(0x28, 0, 0, 40),  // 18: A = source port
        .init(0x15, 3, 0, 5353),  // 19: 5353: accept
        .init(0x28, 0, 0, 42),  // 20: A = destination port
        .init(0x15, 1, 0, 5353),  // 21: 5353: accept
        .init(0x06, 0, 0, 0),  // 22: reject
        .init(0x06, 0, 0, 262_144),  // 23: accept, whole
    ]
}

/// `struct sock_filter` (linux/filter.h).
struct FilterInstruction {
    var code: UInt16
    var jumpTrue: UInt8
    var jumpFalse: UInt8
    var k: UInt32
    init(_ code: UInt16, _ jumpTrue: UInt8, _ jumpFalse: UInt8, _ k: UInt32) {
        self.code = code
        self.jumpTrue = jumpTrue
        self.jumpFalse = jumpFalse
        self.k = k
    }
}

/// `struct sock_fprog`.
struct SocketFilterProgram {
    var length: UInt16
    var filter: UnsafeMutablePointer<FilterInstruction>?
}

/// `struct sockaddr_ll` (netpacket/packet.h).
struct LinkAddress {
    var family: UInt16
    var protocolNumber: UInt16
    var index: Int32
    var hardwareType: UInt16 = 0
    var packetType: UInt8 = 0
    var addressLength: UInt8 = 0
    var address: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
}
