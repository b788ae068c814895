import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What this host's neighbour tables (ARP for IPv4, neighbour discovery for IPv6) say of an address
/// after a connection to it went unanswered: whether some machine on the link has it at all. A TCP
/// timeout alone cannot tell "nobody has that address" from "a host is there and drops the port".
package enum Neighbours {
    package enum State: Sendable, Equatable {
        /// A machine answered ARP for the address: it is there (and drops the port, if it did not answer).
        case answered
        /// The kernel asked and nobody answered (an incomplete or failed entry).
        case silent
    }

    /// The state of `address` in the kernel's neighbour table: IPv4 from `/proc/net/arp`, IPv6
    /// (which has no such file) from a netlink dump of the neighbour discovery table, as
    /// `ip -6 neigh` reads it — both readable by every user. A link-local address's zone
    /// (`fe80::2%nb0`) picks the interface. nil when it has no entry (not on a link of this host:
    /// a router's business).
    package static func state(of address: String, table path: String = "/proc/net/arp") -> State? {
        guard !address.contains(":") else { return state(ofIPv6: address, in: ipv6Entries()) }
        guard let data = FileManager.default.contents(atPath: path), data.count < 4 << 20 else { return nil }
        return state(of: address, in: String(decoding: data, as: UTF8.self))
    }

    /// The state of an IPv6 address (with its zone, for a link-local one) among `entries`.
    package static func state(ofIPv6 address: String, in entries: [Entry]) -> State? {
        let parts = address.split(separator: "%", maxSplits: 1)
        var v6 = in6_addr()
        guard let first = parts.first, inet_pton(AF_INET6, String(first), &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        let zone = parts.count > 1 ? String(parts[1]) : nil
        let index = zone.map { Int32(bitPattern: if_nametoindex($0)) }
        return entries.first { $0.address == bytes && (index == nil || $0.interfaceIndex == index) }?.state
    }

    /// `IP address  HW type  Flags  HW address  Mask  Device` lines: flag 0x2 (ATF_COM) is a
    /// complete entry, a machine's answer.
    package static func state(of address: String, in table: String) -> State? {
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 4, fields[0] == address else { continue }
            let flags = Int(fields[2].dropFirst(2), radix: 16) ?? 0
            return flags & 0x2 != 0 && fields[3] != "00:00:00:00:00:00" ? .answered : .silent
        }
        return nil
    }
}
