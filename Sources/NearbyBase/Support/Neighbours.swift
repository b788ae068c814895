import Foundation

/// What this host's neighbour (ARP) table says of an address after a connection to it went
/// unanswered: whether some machine on the link has it at all. A TCP timeout alone cannot tell
/// "nobody has that address" from "a host is there and drops the port".
package enum Neighbours {
    package enum State: Sendable, Equatable {
        /// A machine answered ARP for the address: it is there (and drops the port, if it did not answer).
        case answered
        /// The kernel asked and nobody answered (an incomplete or failed entry).
        case silent
    }

    /// The state of `address` in the kernel's IPv4 neighbour table (`/proc/net/arp`, readable by
    /// every user); nil when it has no entry (not on a link of this host: a router's business) or
    /// for IPv6 (no such file; EHOSTUNREACH says it there once neighbour discovery gives up).
    package static func state(of address: String, table path: String = "/proc/net/arp") -> State? {
        guard !address.contains(":"), let data = FileManager.default.contents(atPath: path), data.count < 4 << 20 else { return nil }
        return state(of: address, in: String(decoding: data, as: UTF8.self))
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
