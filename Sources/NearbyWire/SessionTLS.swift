import Crypto
import Foundation
import NIOCore
import NIOSSL
import X509
import NearbyIdentity

/// TLS 1.3 with mutual authentication and self-signed certificates made from the identity keys.
/// No certificate authority is involved: each side accepts any well-formed certificate in the
/// handshake, records its public key, and the session then checks that key against the peer ID it
/// expected (and against `known_peers`). `trustRoots` is empty so a Linux machine without a CA
/// bundle works the same.
package enum SessionTLS {
    /// The contexts for both sides of a connection. Blocking work (certificate signing, BoringSSL
    /// setup): build them off the event loop, once per node.
    package struct Contexts: Sendable {
        package let client: NIOSSLContext
        package let server: NIOSSLContext
    }

    package static func contexts(for identity: Identity) throws -> Contexts {
        let key = identity.privateKey
        let name = try DistinguishedName { CommonName(identity.peerID.rawValue) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-86400),
            notValidAfter: now.addingTimeInterval(86400 * 365 * 10),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {},
            issuerPrivateKey: Certificate.PrivateKey(key))
        let pem = try certificate.serializeAsPEM().pemString
        let nioCertificate = try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem)
        let nioKey = try NIOSSLPrivateKey(bytes: Array(key.derRepresentation), format: .der)

        func harden(_ configuration: inout TLSConfiguration) {
            configuration.minimumTLSVersion = .tlsv13
            configuration.maximumTLSVersion = .tlsv13
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates([])
            // A goodbye has already been said when we close; do not wait long for a vanished peer's
            // close_notify (the default 5 s would delay its `disconnected`).
            configuration.shutdownTimeout = .milliseconds(500)
        }
        var server = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(nioCertificate)], privateKey: .privateKey(nioKey))
        harden(&server)
        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = [.certificate(nioCertificate)]
        client.privateKey = .privateKey(nioKey)
        harden(&client)
        return Contexts(client: try NIOSSLContext(configuration: client), server: try NIOSSLContext(configuration: server))
    }

    /// Accepts whatever self-signed certificate the peer shows and reports its public key (SPKI DER),
    /// which the session then checks against the identity the peer claims and signs for.
    package static func verifier(
        recording: @escaping @Sendable ([UInt8]) -> Void
    ) -> NIOSSLCustomVerificationCallback {
        { certificates, promise in
            guard let leaf = certificates.first, let key = try? leaf.extractPublicKey().toSPKIBytes() else {
                promise.succeed(.failed)
                return
            }
            recording(key)
            promise.succeed(.certificateVerified)
        }
    }
}
