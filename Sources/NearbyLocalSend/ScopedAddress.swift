import NIOCore
import NearbyBase
import NearbyDiscovery
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How LocalSend writes a device's address: IPv4 as it is, IPv6 as it is, and an IPv6 link-local
/// address with its zone (`fe80::1%eth0`), without which it cannot be dialled — the official app
/// keeps the zone too (1.18, `core/src/discovery/mod.rs`, `fe80::1%3`; we name the interface, as
/// `ip` and `ping` do, and getaddrinfo reads either). Pure, the interface names injected.
package enum ScopedAddress {
    /// The text of `ip` heard on interface `scope` (the sender's `sin6_scope_id`, 0 when none):
    /// zoned only when it is link-local (`fe80::/10`) and the scope is known. `name` turns an
    /// interface index into its name (nil: the index itself is written).
    package static func text(_ ip: String, scope: UInt32, name: (UInt32) -> String?) -> String {
        guard scope != 0, isLinkLocal(ip), !ip.contains("%") else { return ip }
        return ip + "%" + (name(scope).flatMap { $0.isEmpty || $0.utf8.count > 15 ? nil : $0 } ?? String(scope))
    }

    /// Whether `host` (with or without a zone) is an IPv6 address.
    package static func isIPv6(_ host: String) -> Bool { host.contains(":") }

    /// Whether `ip` is an IPv6 link-local unicast address (`fe80::/10`): discovery's one test of it.
    package static func isLinkLocal(_ ip: String) -> Bool { Subnets.isLinkLocal(ip) }

    /// `host:port` for a Host header or a message: an IPv6 address in brackets, its zone written
    /// `%25` (RFC 6874).
    package static func authority(_ host: String, port: Int) -> String {
        guard isIPv6(host) else { return "\(host):\(port)" }
        return "[\(host.replacingOccurrences(of: "%", with: "%25"))]:\(port)"
    }

    /// The address a connection or datagram came from, as LocalSend writes it: an IPv4 client of a
    /// dual-stack socket without its `::ffff:` prefix, a link-local IPv6 one with its zone.
    package static func of(_ address: SocketAddress?) -> String {
        guard let address else { return "unknown" }
        if case let .v6(v6) = address, let ip = address.ipAddress, !(ip.hasPrefix("::ffff:") && ip.contains(".")) {
            return text(ip, scope: v6.address.sin6_scope_id, name: interfaceName)
        }
        return Admission.key(address)
    }

    /// The name of interface `index`, nil when there is none.
    package static func interfaceName(_ index: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
