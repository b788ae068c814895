import Foundation

/// What goes wrong with wide-area DNS-SD (`--domain`), each in one sentence with its own exit
/// status (docs/exit-codes.md). None of them ever shows the TSIG secret.
package enum WideAreaFailure: Equatable, Sendable {
    /// No answer, or no route, from the DNS server.
    case unreachable(server: String, reason: String)
    /// The server does not know our key, or our signature did not check out (BADKEY, BADSIG).
    case keyRejected(server: String, why: String)
    /// Our clock and the server's are further apart than TSIG allows (BADTIME).
    case clockSkew(server: String)
    /// The server is not authoritative for the domain or refuses updates to it.
    case zoneRefused(zone: String, server: String, rcode: String)
    /// The key file cannot be used (missing, unreadable, not 0600, not a tsig-keygen key).
    case keyFile(path: String, reason: String)
    /// No DNS server was given and none could be found for the domain.
    case noServer(domain: String, reason: String)
    /// The server answered something else we cannot use.
    case failed(server: String, what: String)
    /// An update's prerequisite did not hold (NXRRSET, YXRRSET): the records are no longer what we
    /// read, so the server changed nothing.
    case changed(server: String, rcode: String)

    package var code: String {
        switch self {
        case .unreachable, .noServer: "dns-unreachable"
        case .keyRejected: "dns-key-rejected"
        case .clockSkew: "dns-clock-skew"
        case .zoneRefused: "dns-zone-refused"
        case .keyFile: "dns-key-file"
        case .failed, .changed: "dns-failed"
        }
    }

    package var exitStatus: ExitStatus {
        switch self {
        case .unreachable, .noServer: .dnsUnreachable
        case .keyRejected, .clockSkew: .dnsKeyRejected
        case .zoneRefused: .dnsZoneRefused
        case .keyFile: .ioError
        case .failed, .changed: .failure
        }
    }

    package var message: String {
        switch self {
        case let .unreachable(server, reason):
            "the DNS server \(server) did not answer (\(reason)); is it running and reachable?"
        case let .keyRejected(server, why):
            "the DNS server \(server) rejected our TSIG key (\(why)); check that \(Spelling.option(.dnsKey)) is the key the zone's update-policy grants"
        case let .clockSkew(server):
            "the DNS server \(server) says our clock is too far from its own for TSIG (BADTIME); set the clock right (NTP)"
        case let .zoneRefused(zone, server, rcode):
            "the DNS server \(server) refused the zone \(zone) (\(rcode)): it does not serve it or allow this update; is the domain right, and the zone dynamic with an update-policy for the key?"
        case let .keyFile(path, reason):
            "cannot use the TSIG key file \(path): \(reason)"
        case let .noServer(domain, reason):
            "no DNS server found for \(domain) (\(reason)); give one with \(Spelling.option(.dnsServer, "HOST[:PORT]"))"
        case let .failed(server, what):
            "the DNS server \(server) \(what)"
        case let .changed(server, rcode):
            "the DNS server \(server) changed nothing (\(rcode)): the records are no longer as we read them"
        }
    }
}
