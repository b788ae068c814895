import Foundation
import NearbyBase

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `nearby doctor HOST:PORT`, and the peer not found by name: which subnets this host is on, and
/// whether an address is on one of them. mDNS is link-local (it does not cross routers), so a peer
/// on another subnet is reached by address or not at all.
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

    /// The subnets mDNS reaches from here: `10.99.0.0/24 on nb0`, of interfaces that are up, not
    /// loopback, and not IPv6 link-local (every link has fe80::/64).
    package static func ours(_ interfaces: [NetworkInterface]) -> [String] {
        interfaces.filter { $0.up && !$0.loopback }.flatMap { interface in
            interface.networks.filter { !$0.lowercased().hasPrefix("fe80") }.map { "\(network($0)) on \(interface.name)" }
        }
    }

    /// The `subnet` check of `doctor HOST:PORT`: ok when HOST is on one of this host's subnets,
    /// warn when it is on none (found only by address). nil when HOST is a name, not an address.
    package static func check(host: String, port: Int, interfaces: [NetworkInterface]) -> DoctorCheck? {
        guard bytes(host) != nil else { return nil }
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if host.lowercased().hasPrefix("fe80") || host.hasPrefix("127.") || host == "::1" {
            return DoctorCheck("subnet", .ok, "\(host) is on this link (link-local or loopback)")
        }
        for interface in interfaces where interface.up {
            if let network = interface.networks.first(where: { contains($0, host) }) {
                return DoctorCheck("subnet", .ok, "\(host) is on this host's subnet \(Self.network(network)) (\(interface.name))")
            }
        }
        let subnets = ours(interfaces)
        return DoctorCheck(
            "subnet", .warn,
            "\(host) is on none of this host's subnets (\(subnets.isEmpty ? "none" : subnets.joined(separator: ", "))): "
                + "mDNS does not cross routers, so a peer there is never found by name, only by address",
            hint: "name it by its address: '\(Spelling.command(.send, address, "TEXT"))', '\(Spelling.command(.invite, address))'")
    }

    /// The words a `peer` check that found nothing adds: a peer behind a router is not found by name.
    package static func notFoundHint(_ interfaces: [NetworkInterface]) -> String {
        let subnets = ours(interfaces)
        let here = subnets.isEmpty ? "" : " (this host is on \(subnets.joined(separator: ", ")))"
        return "if it is on another subnet\(here), mDNS does not cross routers: name it by address, '\(Spelling.command(.doctor, "HOST:PORT"))'"
    }
}
