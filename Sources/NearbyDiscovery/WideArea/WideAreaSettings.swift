import Foundation
import NearbyDNS
import NearbyBase

/// Wide-area DNS-SD (`--domain`): where to browse and register, with which key, and the lease.
///
/// The lease (docs/wide-area.md): records carry a short TTL (`NEARBY_DNS_TTL`, default 5 s) and the
/// TXT record a `_lease=<UNIX seconds>` expiry, `lease` from the last refresh (`NEARBY_DNS_LEASE`,
/// default 60 s). A running node refreshes every third of its lease and deletes its records when it
/// stops; browsers treat an instance whose lease has passed as gone, and a registering node deletes
/// instances whose lease passed long ago, so a node killed with SIGKILL is reported lost once its
/// lease ends and its records do not stay in the zone.
package struct WideAreaSettings: Sendable {
    package var domain: DNSName
    /// As the user gave it, for events and messages.
    package var domainText: String
    /// `--dns-server`; nil: found from the domain (SRV `_dns-update._udp`, else the SOA primary)
    /// for updates, and the system resolver for queries.
    package var server: DNSServerAddress?
    /// `--dns-key`, else `$NEARBY_HOME/dns.key`.
    package var keyPath: String
    package var lease = Duration.seconds(60)
    package var ttl: UInt32 = 5
    /// Each exchange with the server, all its tries (`NEARBY_DNS_TIMEOUT`).
    package var timeout = Duration.seconds(3)
    /// Seconds added to our clock when signing (`NEARBY_DNS_CLOCK_SKEW`, tests only: shows BADTIME
    /// against a real server without changing the machine's clock).
    package var clockSkew: Int64 = 0
    /// The system resolver's configuration (`NEARBY_RESOLV_CONF`, tests only: a lab host's resolver).
    package var resolvConf = "/etc/resolv.conf"

    package static let defaultKeyFile = "dns.key"
    package static let leaseKey = "_lease"

    package init(domain: String, server: DNSServerAddress?, keyPath: String) throws(NearbyError) {
        let trimmed = domain.hasSuffix(".") ? String(domain.dropLast()) : domain
        guard !trimmed.isEmpty, trimmed.lowercased() != "local" else {
            throw .invalidArgument("\(Spelling.option(.domain)) '\(domain)': give a unicast DNS domain such as office.example.com (without \(Spelling.option(.domain)), nearby uses local.)")
        }
        do {
            self.domain = try DNSName(trimmed)
        } catch {
            throw .invalidArgument("\(Spelling.option(.domain)) '\(domain)' is not a valid domain name")
        }
        domainText = self.domain.description
        self.server = server
        self.keyPath = keyPath
    }

    /// Test and tuning knobs from the environment.
    package mutating func apply(environment: [String: String]) {
        if let lease = Duration.seconds(parsing: environment["NEARBY_DNS_LEASE"]) { self.lease = max(lease, .seconds(3)) }
        if let ttl = environment["NEARBY_DNS_TTL"].flatMap(UInt32.init), (1...3600).contains(ttl) { self.ttl = ttl }
        if let timeout = Duration.seconds(parsing: environment["NEARBY_DNS_TIMEOUT"]) { self.timeout = min(timeout, .seconds(60)) }
        if let path = environment["NEARBY_RESOLV_CONF"], !path.isEmpty { resolvConf = path }
        if let skew = environment["NEARBY_DNS_CLOCK_SKEW"].flatMap(Int64.init), abs(skew) < 86_400 { clockSkew = skew }
    }

    /// How often a browser asks again: never faster than the records' TTL allows, at least 1 s.
    package var pollInterval: Duration { .seconds(max(Int(ttl), 1)) }
    /// How often a registered node rewrites its records and lease.
    package var refreshInterval: Duration { lease / 3 }

    package var leaseSeconds: Int { Int(lease / .seconds(1)) }

    /// Reads the TSIG key. The file must be the owner's alone (0600 or stricter), as it signs
    /// changes to the zone; its contents never appear in any message.
    package func loadKey() throws(NearbyError) -> TSIGKey {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: keyPath)
        } catch {
            throw .wideArea(.keyFile(path: keyPath, reason: "it does not exist or cannot be read; make one with 'tsig-keygen NAME > \(keyPath)' and give the server the same key"))
        }
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o777
        guard mode & 0o077 == 0 else {
            throw .wideArea(.keyFile(path: keyPath, reason: "its mode is \(String(mode, radix: 8)); a TSIG key must be readable by its owner only (chmod 600)"))
        }
        guard let data = FileManager.default.contents(atPath: keyPath), let text = String(data: data, encoding: .utf8) else {
            throw .wideArea(.keyFile(path: keyPath, reason: "cannot read it"))
        }
        do {
            return try TSIGKey.parse(keyFile: text)
        } catch {
            let reason = if case let .tsig(why) = error { why } else { "not a key file" }
            throw .wideArea(.keyFile(path: keyPath, reason: reason))
        }
    }
}
