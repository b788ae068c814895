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

extension Neighbours {
    /// The machines this host's neighbour tables say answered, on the interfaces named by
    /// `interfaces` (nil: any): IPv4 addresses from `/proc/net/arp`, then link-local IPv6 ones with
    /// their zone (`fe80::2%nb0`). Only hosts this host has exchanged unicast with lately are there.
    package static func answered(on interfaces: Set<String>?, table path: String = "/proc/net/arp") -> [String] {
        let table = FileManager.default.contents(atPath: path).flatMap { $0.count < 4 << 20 ? String(decoding: $0, as: UTF8.self) : nil } ?? ""
        return answered(inTable: table, on: interfaces) + answered(ipv6: ipv6Entries(), on: interfaces)
    }

    /// The complete entries of an ARP table's text on `interfaces` (nil: any), in its order.
    package static func answered(inTable table: String, on interfaces: Set<String>?) -> [String] {
        table.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, interfaces?.contains(String(fields[5])) ?? true,
                  state(of: String(fields[0]), in: "header\n" + line) == .answered else { return nil }
            return String(fields[0])
        }
    }

    /// The answered link-local IPv6 entries on `interfaces` (nil: any), each with its zone.
    package static func answered(ipv6 entries: [Entry], on interfaces: Set<String>?, name: (Int32) -> String? = interfaceName) -> [String] {
        entries.compactMap { entry in
            guard entry.state == .answered, entry.address.count == 16, entry.address[0] == 0xFE, entry.address[1] & 0xC0 == 0x80,
                  let zone = name(entry.interfaceIndex), interfaces?.contains(zone) ?? true else { return nil }
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: entry.address) }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
            return "\(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))%\(zone)"
        }
    }

    /// The name of interface `index` (`nb0`), nil when there is none.
    package static func interfaceName(_ index: Int32) -> String? {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard index > 0, if_indextoname(UInt32(index), &name) != nil else { return nil }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
