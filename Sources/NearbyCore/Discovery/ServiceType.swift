/// An MPC service type such as `chat-v2`: validated by MPC's rules before anything touches the network
/// (a bad one crashes an iOS app; here it is a clear error).
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    public static let `default` = ServiceType(unchecked: "nearby")

    public init(_ name: String) throws(NearbyError) {
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

    /// The DNS-SD registration type, e.g. `_chat-v2._tcp`.
    public var registrationType: String { "_\(name)._tcp" }

    public var description: String { name }
}

/// A peer's display name, as MPC limits it: 1–63 bytes of UTF-8.
public enum DisplayName {
    public static let maxBytes = 63

    public static func validate(_ name: String) throws(NearbyError) {
        let count = name.utf8.count
        guard count > 0 else { throw .invalidDisplayName(name, rule: "it must not be empty") }
        guard count <= maxBytes else {
            throw .invalidDisplayName(name, rule: "it is \(count) bytes of UTF-8; the limit is \(maxBytes)")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidDisplayName(name, rule: "it must not contain control characters")
        }
    }

    /// A usable default from the host name, cut to the limit on a character boundary.
    public static func fromHostName(_ host: String) -> String {
        var name = host.split(separator: ".").first.map(String.init) ?? ""
        while name.utf8.count > maxBytes { name.removeLast() }
        return name.isEmpty ? "nearby" : name
    }
}
