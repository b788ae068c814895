import Foundation
import NearbyBase

/// A peer's display name, as MPC limits it: 1–63 bytes of UTF-8.
package enum DisplayName {
    package static let maxBytes = 63

    package static func validate(_ name: String) throws(NearbyError) {
        let count = name.utf8.count
        guard count > 0 else { throw .invalidDisplayName(name, rule: "it must not be empty") }
        guard count <= maxBytes else {
            throw .invalidDisplayName(name, rule: "it is \(count) bytes of UTF-8; the limit is \(maxBytes)")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidDisplayName(name, rule: "it must not contain control characters")
        }
        guard !name.allSatisfy(\.isWhitespace) else {
            throw .invalidDisplayName(name, rule: "it is only spaces; a name must have something to read")
        }
    }

    /// A usable default from the host name, cut to the limit on a character boundary.
    package static func fromHostName(_ host: String) -> String {
        let name = (host.split(separator: ".").first.map(String.init) ?? "").cut(toUTF8Bytes: maxBytes)
        return name.isEmpty ? "nearby" : name
    }

    /// The name a new identity starts with: the host name and the first four characters of the
    /// peer ID, `vm-k3x9`. Hosts that share a name (every lab VM is `vm`, many Pis `raspberrypi`)
    /// still show up as different peers; `identity --rename` picks a better one.
    package static func fromHostName(_ host: String, peerID: PeerID) -> String {
        let suffix = "-" + peerID.rawValue.prefix(4)
        var name = fromHostName(host)
        while name.utf8.count + suffix.utf8.count > maxBytes { name.removeLast() }
        return name + suffix
    }
}
