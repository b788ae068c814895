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
