/// An MPC service type such as `chat-v2`: validated by MPC's rules before anything touches the network
/// (a bad one crashes an iOS app; here it is a clear error).
package struct ServiceType: Hashable, Sendable, CustomStringConvertible {
    package let name: String

    package static let `default` = ServiceType(unchecked: "nearby")

    package init(_ name: String) throws(NearbyError) {
        func refuse(_ rule: String) -> NearbyError { .invalidServiceType(name, rule: rule) }
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { throw refuse("it must not be empty (1–15 characters)") }
        guard bytes.count <= 15 else {
            throw refuse("it is \(bytes.count) characters long; the limit is 15")
        }
        for byte in bytes {
            let ok = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            guard ok else {
                throw refuse("only lowercase ASCII letters, digits and hyphens are allowed")
            }
        }
        guard bytes.contains(where: { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }) else {
            throw refuse("it must contain at least one letter")
        }
        guard bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-") else {
            throw refuse("it must not begin or end with a hyphen")
        }
        guard !name.contains("--") else { throw refuse("it must not contain two hyphens in a row") }
        self.name = name
    }

    private init(unchecked name: String) { self.name = name }

    /// A `--service` value: MPC's short form (`chat`). The full DNS-SD form `_chat._tcp`, which
    /// `browse` takes for foreign types (`DNSSDType.parse`, the one parser of that form), is refused
    /// with the short form to use instead, so a user who types what avahi-browse shows learns the rule.
    package init(option text: String) throws(NearbyError) {
        do {
            try self.init(text)
        } catch {
            if let full = DNSSDType.parse(text), full.hasSuffix("._tcp"),
               let short = try? ServiceType(String(full.dropFirst().dropLast("._tcp".count))) {
                throw .invalidServiceType(text, rule: "that is the DNS-SD type; nearby takes the service name: use `\(Spelling.option(.service, short.name))`")
            }
            throw error
        }
    }

    /// The DNS-SD registration type, e.g. `_chat-v2._tcp`.
    package var registrationType: String { "_\(name)._tcp" }

    package var description: String { name }
}

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
        var name = host.split(separator: ".").first.map(String.init) ?? ""
        while name.utf8.count > maxBytes { name.removeLast() }
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
