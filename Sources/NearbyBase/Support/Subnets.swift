import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// IP addresses as bytes, and whether one is inside a network: the one test of link-local (every
/// `fe80::/10`, not only the `fe80` its text starts with) for discovery, the doctor and the web page.
package enum Subnets {
    /// The bytes of an IPv4 or IPv6 address (a `%zone` is ignored); nil for anything else.
    package static func bytes(_ address: String) -> [UInt8]? {
        let plain = String(address.split(separator: "%", maxSplits: 1).first ?? "")
        var v4 = in_addr()
        if inet_pton(AF_INET, plain, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, plain, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether `address` is inside `network` (`10.99.0.2/24`: the address of an interface with its prefix).
    package static func contains(_ network: String, _ address: String) -> Bool {
        let parts = network.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let bits = Int(parts[1]), let net = bytes(String(parts[0])), let host = bytes(address),
              net.count == host.count, (0...net.count * 8).contains(bits)
        else { return false }
        for index in 0..<net.count {
            let used = min(8, max(0, bits - index * 8))
            let mask: UInt8 = used == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - used))
            if net[index] & mask != host[index] & mask { return false }
        }
        return true
    }

    /// Whether `address` is an IPv6 link-local unicast address (`fe80::/10`), with or without a zone.
    package static func isLinkLocal(_ address: String) -> Bool {
        guard let bytes = bytes(address), bytes.count == 16 else { return false }
        return bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
    }

    /// `10.99.0.0/24` for `10.99.0.2/24`: the network an interface's address is on.
    package static func network(_ cidr: String) -> String {
        let parts = cidr.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let bits = Int(parts[1]), var net = bytes(String(parts[0])) else { return cidr }
        for index in 0..<net.count {
            let used = min(8, max(0, bits - index * 8))
            net[index] &= used == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - used))
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = net.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, net, &buffer, socklen_t(buffer.count)) != nil else { return cidr }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/\(bits)"
    }
}
