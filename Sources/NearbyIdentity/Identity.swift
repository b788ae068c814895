import Crypto
import Foundation

/// The long-term identity of this user on this machine: a P-256 key pair (what TLS 1.3 certificates
/// are made from), the peer ID derived from its public key, and a display name.
package struct Identity: Sendable {
    private let key: SigningKey
    package let peerID: PeerID
    package var displayName: String
    package let created: Date

    package init(privateKey: P256.Signing.PrivateKey, displayName: String, created: Date = Date()) {
        self.key = SigningKey(value: privateKey)
        self.peerID = PeerID(publicKeyDER: privateKey.publicKey.derRepresentation)
        self.displayName = displayName
        self.created = created
    }

    /// The key itself, as it was loaded or made: there is no path that could invent another one.
    package var privateKey: P256.Signing.PrivateKey { key.value }

    package var publicKeyDER: Data { privateKey.publicKey.derRepresentation }

    /// SHA-256 of the public key, hex: what `known_peers` pins and what a user compares by hand.
    package var fingerprint: String {
        Hex.encode(SHA256.hash(data: publicKeyDER))
    }
}

/// swift-crypto's key type is not declared `Sendable`; this immutable value of it is safe to share.
private struct SigningKey: @unchecked Sendable {
    let value: P256.Signing.PrivateKey
}

/// The identity file's JSON form. `id` is redundant and checked against the key on load, so a file
/// edited by hand or damaged on disk is caught instead of quietly becoming someone else.
struct IdentityFile: Codable {
    var version: Int
    var id: String
    var name: String
    var privateKey: String
    var created: Date
}
