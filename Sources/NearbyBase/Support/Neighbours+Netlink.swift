import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The IPv6 neighbour table, read as `ip -6 neigh` reads it: an `RTM_GETNEIGH` dump over a
/// NETLINK_ROUTE socket (any user may ask; the table is this network namespace's).
extension Neighbours {
    /// One neighbour discovery entry: the address, the interface it is on, its `NUD_*` state.
    package struct Entry: Sendable, Equatable {
        package var address: [UInt8]
        package var interfaceIndex: Int32
        package var state: State

        package init(address: [UInt8], interfaceIndex: Int32, state: State) {
            self.address = address
            self.interfaceIndex = interfaceIndex
            self.state = state
        }
    }

    // linux/rtnetlink.h and linux/neighbour.h, which Glibc does not bring.
    static let netlinkRoute: Int32 = 0
    static let getNeighbours: UInt16 = 30, newNeighbour: UInt16 = 28, done: UInt16 = 3, error: UInt16 = 2
    static let request: UInt16 = 0x1, dump: UInt16 = 0x300
    static let destination: UInt16 = 1
    /// NUD_INCOMPLETE and NUD_FAILED: the kernel asked and nobody answered.
    static let unanswered: UInt16 = 0x01 | 0x20
    /// NUD_REACHABLE, STALE, DELAY, PROBE, NOARP, PERMANENT: a machine answered (or is configured).
    static let answeredStates: UInt16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80
    /// The most a dump is read: a neighbour table is a few KB, this bounds a pathological one.
    static let maxDumpBytes = 4 << 20

    /// This namespace's IPv6 neighbours; empty when netlink cannot be read.
    package static func ipv6Entries() -> [Entry] {
        let socket = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkRoute)
        guard socket >= 0 else { return [] }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // nlmsghdr (16 bytes) then ndmsg (12 bytes) asking for AF_INET6; sent to the kernel (port 0).
        var message = [UInt8](repeating: 0, count: 28)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { for (index, byte) in $0.enumerated() { message[offset + index] = byte } }
        }
        put(UInt32(28), at: 0)
        put(getNeighbours, at: 4)
        put(request | dump, at: 6)
        put(UInt32(1), at: 8)
        message[16] = UInt8(AF_INET6)
        guard message.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, 0) }) == message.count else { return [] }
        var all: [Entry] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var total = 0
        while total < maxDumpBytes {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            total += count
            let (found, finished) = entries(inDump: buffer[0..<count])
            all += found
            if finished { break }
        }
        return all
    }

    /// The neighbour entries in one datagram of a dump, and whether it ended the dump (NLMSG_DONE
    /// or an error). Every length is checked against what is there.
    package static func entries(inDump bytes: ArraySlice<UInt8>) -> (entries: [Entry], finished: Bool) {
        let data = Array(bytes)
        func u16(_ at: Int) -> UInt16 { UInt16(data[at]) | UInt16(data[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(data[at + $1]) << (8 * $1) } }
        var entries: [Entry] = []
        var offset = 0
        while offset + 16 <= data.count {
            let length = Int(u32(offset)), type = u16(offset + 4)
            guard length >= 16, offset + length <= data.count else { break }
            if type == done || type == error { return (entries, true) }
            // ndmsg: family, pads, ifindex (4), state (2), flags, type; then rtattrs.
            if type == newNeighbour, length >= 28, data[offset + 16] == UInt8(AF_INET6) {
                let index = Int32(bitPattern: u32(offset + 20)), nud = u16(offset + 24)
                var attribute = offset + 28
                while attribute + 4 <= offset + length {
                    let size = Int(u16(attribute)), kind = u16(attribute + 2)
                    guard size >= 4, attribute + size <= offset + length else { break }
                    if kind == destination, size == 20, nud & (unanswered | answeredStates) != 0 {
                        entries.append(Entry(address: Array(data[(attribute + 4)..<(attribute + 20)]), interfaceIndex: index,
                                             state: nud & unanswered != 0 ? .silent : .answered))
                    }
                    attribute += (size + 3) & ~3
                }
            }
            offset += (length + 3) & ~3
        }
        return (entries, false)
    }
}
