import Crypto
import Foundation
import NIOCore

/// A peer whose identity has been proven in this connection.
public struct AuthenticatedPeer: Sendable, Equatable {
    public let id: PeerID
    public let name: String
    public let key: Data
    public let verificationCode: String
    public let encrypted: Bool
    public let address: String

    public var ref: PeerRef { PeerRef(id: id.rawValue, name: name) }
}

/// The first two frames each way: `hello` (ID, name, key, nonce) and `auth` (a signature over both
/// hellos). Each side checks that the key hashes to the claimed ID, that the signature is good, that
/// the TLS certificate carries the same key, that the ID is the one it meant to reach, and that a
/// known peer still has its pinned key.
public enum Handshake {
    public static let version = 1
    public static let deadline = TimeAmount.seconds(10)

    public static func run(
        inbound: inout NIOAsyncChannelInboundStream<Frame>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<Frame>,
        connection: FrameChannel,
        isClient: Bool,
        identity: Identity,
        displayName: String,
        expected: PeerID?,
        knownPeers: KnownPeers
    ) async throws -> AuthenticatedPeer {
        // A peer that stalls is cut off: closing the channel ends the inbound stream below.
        let channel = connection.channel.channel
        let timer = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }

        let ownKey = identity.publicKeyDER
        let ownNonce = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        try await outbound.write(Control.frame(.hello, Control.Hello(
            version: version, id: identity.peerID.rawValue, name: displayName,
            key: ownKey.base64EncodedString(), nonce: ownNonce.base64EncodedString())))

        guard let first = try await inbound.next() else { throw HandshakeFailure.closed }
        guard first.kind == .hello else { throw ProtocolViolation.unexpected("\(first.kind) frame before hello") }
        let hello = try Control.decode(Control.Hello.self, from: first)
        guard hello.version == version else {
            throw HandshakeFailure.incompatible("the peer speaks nearby protocol \(hello.version), we speak \(version)")
        }
        guard let theirKey = Data(base64Encoded: hello.key), theirKey.count <= 512,
              let theirNonce = Data(base64Encoded: hello.nonce), theirNonce.count == 32,
              let publicKey = try? P256.Signing.PublicKey(derRepresentation: theirKey)
        else { throw ProtocolViolation.malformed("hello frame") }
        let theirID = PeerID(publicKeyDER: theirKey)
        guard hello.id == theirID.rawValue else {
            throw NearbyError.identityMismatch(expected: hello.id, got: theirID.rawValue)
        }
        if connection.encrypted {
            guard let certificateKey = connection.certificateKey.key, Data(certificateKey) == theirKey else {
                throw NearbyError.identityMismatch(expected: theirID.rawValue, got: "the key of its TLS certificate")
            }
        }
        if let expected, expected != theirID {
            throw NearbyError.identityMismatch(expected: expected.rawValue, got: theirID.rawValue)
        }
        let name = (try? DisplayName.validate(hello.name)).map { hello.name } ?? String(hello.name.prefix(63))

        let (clientKey, serverKey) = isClient ? (ownKey, theirKey) : (theirKey, ownKey)
        let (clientNonce, serverNonce) = isClient ? (ownNonce, theirNonce) : (theirNonce, ownNonce)
        let mine = SessionMath.authTranscript(
            signerIsClient: isClient, clientKey: clientKey, serverKey: serverKey, clientNonce: clientNonce, serverNonce: serverNonce)
        let signature = try identity.privateKey.signature(for: mine)
        try await outbound.write(Control.frame(.auth, Control.Auth(signature: signature.derRepresentation.base64EncodedString())))

        guard let second = try await inbound.next() else { throw HandshakeFailure.closed }
        guard second.kind == .auth else { throw ProtocolViolation.unexpected("\(second.kind) frame before auth") }
        let auth = try Control.decode(Control.Auth.self, from: second)
        let theirs = SessionMath.authTranscript(
            signerIsClient: !isClient, clientKey: clientKey, serverKey: serverKey, clientNonce: clientNonce, serverNonce: serverNonce)
        guard let der = Data(base64Encoded: auth.signature),
              let theirSignature = try? P256.Signing.ECDSASignature(derRepresentation: der),
              publicKey.isValidSignature(theirSignature, for: theirs)
        else { throw NearbyError.identityMismatch(expected: theirID.rawValue, got: "a peer that cannot sign with its key") }

        if try knownPeers.check(id: theirID, key: theirKey, name: name) == .changed {
            throw NearbyError.keyChanged(peer: theirID.rawValue, knownPeers: knownPeers.path)
        }
        return AuthenticatedPeer(
            id: theirID, name: name, key: theirKey,
            verificationCode: SessionMath.verificationCode(
                clientKey: clientKey, serverKey: serverKey, clientNonce: clientNonce, serverNonce: serverNonce),
            encrypted: connection.encrypted, address: connection.remote)
    }
}

public enum HandshakeFailure: Error, CustomStringConvertible {
    case closed
    case incompatible(String)

    public var description: String {
        switch self {
        case .closed: "the peer closed the connection during the handshake"
        case let .incompatible(why): why
        }
    }
}
