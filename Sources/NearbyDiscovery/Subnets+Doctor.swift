import Foundation
import NearbyBase

/// `nearby doctor HOST:PORT`, and the peer not found by name: which subnets this host is on. mDNS
/// is link-local (it does not cross routers), so a peer on another subnet is reached by address or
/// not at all. (The address arithmetic is the base's `Subnets`.)
extension Subnets {
    /// The subnets mDNS reaches from here: `10.99.0.0/24 on nb0`, of interfaces that are up, not
    /// loopback, and not IPv6 link-local (every link has fe80::/64).
    package static func ours(_ interfaces: [NetworkInterface]) -> [String] {
        interfaces.filter { $0.up && !$0.loopback }.flatMap { interface in
            interface.networks.filter { !isLinkLocal(String($0.split(separator: "/", maxSplits: 1).first ?? "")) }.map { "\(network($0)) on \(interface.name)" }
        }
    }

    /// The `subnet` check of `doctor HOST:PORT`: ok when HOST is on one of this host's subnets,
    /// warn when it is on none (found only by address). nil when HOST is a name, not an address.
    package static func check(host: String, port: Int, interfaces: [NetworkInterface]) -> DoctorCheck? {
        guard bytes(host) != nil else { return nil }
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if isLinkLocal(host) || host.hasPrefix("127.") || host == "::1" {
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
