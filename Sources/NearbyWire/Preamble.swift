import Crypto
import Foundation
import NearbyBase
import NearbyIdentity

/// `--encryption`, with Multipeer Connectivity's rules: `required` and `none` refuse each other,
/// `optional` takes what the other side wants, and two `optional`s encrypt.
package enum EncryptionPreference: String, CaseIterable, Sendable, Codable {
    case required, optional, none

    var wire: UInt8 {
        switch self {
        case .none: 0
        case .optional: 1
        case .required: 2
        }
    }

    init?(wire: UInt8) {
        switch wire {
        case 0: self = .none
        case 1: self = .optional
        case 2: self = .required
        default: return nil
        }
    }

    /// The outcome for a connection between `self` and `other`: true = TLS, false = plaintext,
    /// nil = incompatible.
    package func agree(with other: EncryptionPreference) -> Bool? {
        switch (self, other) {
        case (.required, .none), (.none, .required): nil
        case (.none, _), (_, .none): false
        default: true
        }
    }
}

/// The plaintext preamble that opens every connection, before TLS: the client says `NBY1` and its
/// encryption preference, the server answers `NBY1` and the decision. Anything else on our port (an
/// MPC app, a port scanner) is recognised from its first bytes and closed cleanly.
package enum Preamble {
    package static let magic: [UInt8] = Array("NBY1".utf8)
    package static let size = 5

    package enum Decision: UInt8, Sendable {
        case plaintext = 0
        case tls = 1
        case refusedRequired = 0xFE  // server requires encryption, client wants none
        case refusedNone = 0xFF  // server wants none, client requires encryption
    }

    package static func hello(_ preference: EncryptionPreference) -> [UInt8] { magic + [preference.wire] }
    package static func reply(_ decision: Decision) -> [UInt8] { magic + [decision.rawValue] }

    package enum ClientHello: Equatable, Sendable {
        case nearby(EncryptionPreference)
        /// Not our protocol: what the first bytes suggest it is.
        case foreign(String)
    }

    /// Reads what a client sent first. MPC's own session traffic does not begin with our magic.
    package static func parseClient(_ bytes: [UInt8]) -> ClientHello {
        guard bytes.count >= size, Array(bytes.prefix(4)) == magic else {
            return .foreign(describeForeign(bytes))
        }
        guard let preference = EncryptionPreference(wire: bytes[4]) else { return .foreign("nearby with an unknown encryption preference") }
        return .nearby(preference)
    }

    package static func decide(server: EncryptionPreference, client: EncryptionPreference) -> Decision {
        switch server.agree(with: client) {
        case true?: .tls
        case false?: .plaintext
        case nil: server == .required ? .refusedRequired : .refusedNone
        }
    }

    package static func parseServer(_ bytes: [UInt8]) -> Decision? {
        guard bytes.count >= size, Array(bytes.prefix(4)) == magic else { return nil }
        return Decision(rawValue: bytes[4])
    }

    static func describeForeign(_ bytes: [UInt8]) -> String {
        if bytes.first == 0x16 { return "a TLS client that does not speak nearby (an MPC app or a browser)" }
        if bytes.isEmpty { return "a client that sent nothing" }
        if let text = String(bytes: bytes, encoding: .ascii), text.allSatisfy({ $0.isASCII && !$0.isNewline || $0 == "\r" || $0 == "\n" }) {
            return "a client speaking another text protocol (\(text.prefix(16).trimmingCharacters(in: .whitespacesAndNewlines)))"
        }
        return "a client that does not speak nearby (a Multipeer Connectivity app or another protocol)"
    }
}

/// Shared facts both sides compute the same way.
package enum SessionMath {
    /// The short code both sides show in their invitation events, for humans who want to check that
    /// they are talking to each other and not to someone in between: derived from both identity
    /// keys and both nonces of this session. Each nonce is committed to before the other side's is
    /// known, so a party in the middle cannot pick its nonces until both codes match: one try in a
    /// million per attempted connection.
    package static func verificationCode(
        clientKey: Data, serverKey: Data, clientNonce: Data, serverNonce: Data
    ) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("nearby verification code v2".utf8))
        for part in [clientKey, serverKey, clientNonce, serverNonce] {
            hasher.update(data: withUnsafeBytes(of: UInt32(part.count).bigEndian) { Data($0) })
            hasher.update(data: part)
        }
        let digest = Array(hasher.finalize())
        let value = (UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3])) % 1_000_000
        let digits = String(format: "%06u", value)
        return "\(digits.prefix(3)) \(digits.suffix(3))"
    }

    /// The commitment a hello carries: SHA-256(`"nearby nonce commitment v2"` ‖ nonce).
    package static func commitment(to nonce: Data) -> Data {
        var hasher = SHA256()
        hasher.update(data: Data("nearby nonce commitment v2".utf8))
        hasher.update(data: nonce)
        return Data(hasher.finalize())
    }

    /// What each side signs to prove it holds its identity key: its role and both hellos' keys and
    /// nonce commitments (fresh in every session), so a signature cannot be replayed into another.
    package static func authTranscript(
        signerIsClient: Bool, clientKey: Data, serverKey: Data, clientCommitment: Data, serverCommitment: Data
    ) -> Data {
        var data = Data("nearby auth v2 ".utf8)
        data.append(signerIsClient ? UInt8(ascii: "c") : UInt8(ascii: "s"))
        for part in [clientKey, serverKey, clientCommitment, serverCommitment] {
            data.append(contentsOf: withUnsafeBytes(of: UInt32(part.count).bigEndian) { Array($0) })
            data.append(part)
        }
        return data
    }

    /// Two nodes that invite each other at the same moment keep exactly one connection: the one
    /// opened by the peer with the smaller ID.
    package static func keepsOwnInvitation(own: PeerID, other: PeerID) -> Bool { own < other }
}

extension Preamble {
    /// How a node words an encryption mismatch.
    package static func mismatch(ours: EncryptionPreference, theirs: EncryptionPreference?, decision: Decision) -> NearbyError {
        let other = theirs?.rawValue ?? (decision == .refusedRequired ? "required" : "none")
        return .encryptionMismatch(ours: ours.rawValue, theirs: other)
    }
}
