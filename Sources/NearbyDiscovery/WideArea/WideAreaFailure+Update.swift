import NearbyBase
import NearbyDNS

extension WideAreaFailure {
    /// An UPDATE's answer in words: the rcode, or the TSIG error a NOTAUTH carries.
    static func update(rcode: DNSRcode, tsigError: UInt16?, zone: String, server: String) -> WideAreaFailure? {
        switch tsigError.map(DNSRcode.init(rawValue:)) {
        case .badKey?: return .keyRejected(server: server, why: "BADKEY: it does not know the key's name or algorithm")
        case .badSig?: return .keyRejected(server: server, why: "BADSIG: the signature did not verify, the secret differs")
        case .badTime?: return .clockSkew(server: server)
        default: break
        }
        switch rcode {
        case .noError: return nil
        case .nxRRSet, .yxRRSet: return .changed(server: server, rcode: rcode.description)
        case .notAuth, .refused, .notZone, .nxDomain: return .zoneRefused(zone: zone, server: server, rcode: rcode.description)
        default: return .failed(server: server, what: "answered the update with \(rcode)")
        }
    }
}
