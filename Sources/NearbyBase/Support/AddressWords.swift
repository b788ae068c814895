import NIOCore

/// A socket address as a person reads it in a sentence: `192.0.2.7:5000`, `[fe80::1]:5000`, and an
/// IPv4 client of a dual-stack listener (`::ffff:192.0.2.7`) as the IPv4 address it is.
package enum AddressWords {
    package static func describe(_ address: SocketAddress) -> String {
        switch address {
        case let .v4(v4): "\(address.ipAddress ?? v4.host):\(address.port ?? 0)"
        case .v6:
            // An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d: say a.b.c.d.
            if let ip = address.ipAddress, ip.hasPrefix("::ffff:"), ip.contains(".") {
                "\(ip.dropFirst(7)):\(address.port ?? 0)"
            } else {
                "[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
            }
        default: "\(address)"
        }
    }
}
