import NIOCore
import NearbyBase

/// The page's addresses: one URL per IPv4 address of this host's interfaces that are up and not
/// loopback (what a phone on the same LAN can reach), then IPv6 global ones; loopback only when
/// there is nothing else. `NEARBY_WEB_HOST` names the one address to give instead.
package enum WebAddresses {
    package static func urls(port: Int, token: WebToken, environment: [String: String]) -> [String] {
        if let host = environment["NEARBY_WEB_HOST"], !host.isEmpty { return [url(host, port, token)] }
        var v4: [String] = []
        var v6: [String] = []
        for device in (try? System.enumerateDevices()) ?? [] {
            guard let ip = device.address?.ipAddress else { continue }
            switch device.address {
            case .v4?:
                if !ip.hasPrefix("127."), !v4.contains(ip) { v4.append(ip) }
            case .v6?:
                if ip.lowercased() != "::1", !Subnets.isLinkLocal(ip), !v6.contains(ip) { v6.append(ip) }
            default: continue
            }
        }
        let hosts = v4 + v6
        return (hosts.isEmpty ? ["127.0.0.1"] : hosts).map { url($0, port, token) }
    }

    static func url(_ host: String, _ port: Int, _ token: WebToken) -> String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "http://\(shown):\(port)/\(token.text)/"
    }
}
