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

/// The first two frames each way, as a pure state machine: `hello` (ID, name, key, nonce), then
/// `auth` (a signature over both hellos). Frames go in, actions come out; no I/O, so both sides are
/// tested against each other without sockets. The checks: the key hashes to the claimed ID, the
/// signature is good, the TLS certificate carries the same key, the ID is the one we meant to reach,
/// and a known peer still has its pinned key.
public struct HandshakeStateMachine: Sendable {
    public static let version = 1

    public enum Action: Equatable, Sendable {
        case send(Frame)
        case established(AuthenticatedPeer)
    }

    enum State: Sendable {
        case idle
        case awaitingHello
        case awaitingAuth(theirKey: Data, theirNonce: Data, theirID: PeerID, name: String)
        case done
    }

    let isClient: Bool
    let identity: Identity
    let displayName: String
    let expected: PeerID?
    let encrypted: Bool
    let address: String
    /// The key the peer's TLS certificate carries (SPKI DER), when encrypted.
    let certificateKey: @Sendable () -> Data?
    /// Pins or checks the key: true when it matches what is known (or was unknown and is now pinned).
    let pinned: @Sendable (PeerID, Data, String) throws(NearbyError) -> Bool
    let nonce: Data
    var state = State.idle

    public init(
        isClient: Bool, identity: Identity, displayName: String, expected: PeerID?, encrypted: Bool, address: String,
        certificateKey: @escaping @Sendable () -> Data?,
        pinned: @escaping @Sendable (PeerID, Data, String) throws(NearbyError) -> Bool,
        nonce: Data = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
    ) {
        self.isClient = isClient
        self.identity = identity
        self.displayName = displayName
        self.expected = expected
        self.encrypted = encrypted
        self.address = address
        self.certificateKey = certificateKey
        self.pinned = pinned
        self.nonce = nonce
    }

    /// Both sides speak first: our hello.
    public mutating func start() -> [Action] {
        state = .awaitingHello
        return [.send(Control.frame(.hello, Control.Hello(
            version: Self.version, id: identity.peerID.rawValue, name: displayName,
            key: identity.publicKeyDER.base64EncodedString(), nonce: nonce.base64EncodedString())))]
    }

    public mutating func received(_ frame: Frame) throws -> [Action] {
        switch state {
        case .awaitingHello:
            guard frame.kind == .hello else { throw ProtocolViolation.unexpected("\(frame.kind) frame before hello") }
            return try hello(Control.decode(Control.Hello.self, from: frame))
        case let .awaitingAuth(theirKey, theirNonce, theirID, name):
            guard frame.kind == .auth else { throw ProtocolViolation.unexpected("\(frame.kind) frame before auth") }
            let auth = try Control.decode(Control.Auth.self, from: frame)
            return try authenticated(auth, theirKey: theirKey, theirNonce: theirNonce, theirID: theirID, name: name)
        case .idle, .done:
            throw ProtocolViolation.unexpected("\(frame.kind) frame outside the handshake")
        }
    }

    private mutating func hello(_ hello: Control.Hello) throws -> [Action] {
        guard hello.version == Self.version else {
            throw HandshakeFailure.incompatible("the peer speaks nearby protocol \(hello.version), we speak \(Self.version)")
        }
        guard let theirKey = Data(base64Encoded: hello.key), theirKey.count <= 512,
              let theirNonce = Data(base64Encoded: hello.nonce), theirNonce.count == 32,
              (try? P256.Signing.PublicKey(derRepresentation: theirKey)) != nil
        else { throw ProtocolViolation.malformed("hello frame") }
        let theirID = PeerID(publicKeyDER: theirKey)
        guard hello.id == theirID.rawValue else {
            throw NearbyError.identityMismatch(expected: String(hello.id.prefix(64)), got: theirID.rawValue)
        }
        if encrypted {
            guard let certificateKey = certificateKey(), certificateKey == theirKey else {
                throw NearbyError.identityMismatch(expected: theirID.rawValue, got: "the key of its TLS certificate")
            }
        }
        if let expected, expected != theirID {
            throw NearbyError.identityMismatch(expected: expected.rawValue, got: theirID.rawValue)
        }
        let name = (try? DisplayName.validate(hello.name)) != nil ? hello.name : Self.sanitized(hello.name)
        state = .awaitingAuth(theirKey: theirKey, theirNonce: theirNonce, theirID: theirID, name: name)
        let signature = try identity.privateKey.signature(for: transcript(signerIsClient: isClient, theirKey: theirKey, theirNonce: theirNonce))
        return [.send(Control.frame(.auth, Control.Auth(signature: signature.derRepresentation.base64EncodedString())))]
    }

    private mutating func authenticated(
        _ auth: Control.Auth, theirKey: Data, theirNonce: Data, theirID: PeerID, name: String
    ) throws -> [Action] {
        guard let der = Data(base64Encoded: auth.signature),
              let signature = try? P256.Signing.ECDSASignature(derRepresentation: der),
              let publicKey = try? P256.Signing.PublicKey(derRepresentation: theirKey),
              publicKey.isValidSignature(signature, for: transcript(signerIsClient: !isClient, theirKey: theirKey, theirNonce: theirNonce))
        else { throw NearbyError.identityMismatch(expected: theirID.rawValue, got: "a peer that cannot sign with its key") }
        guard try pinned(theirID, theirKey, name) else {
            throw NearbyError.keyChanged(peer: theirID.rawValue, knownPeers: "known_peers")
        }
        state = .done
        let (clientKey, serverKey) = isClient ? (identity.publicKeyDER, theirKey) : (theirKey, identity.publicKeyDER)
        let (clientNonce, serverNonce) = isClient ? (nonce, theirNonce) : (theirNonce, nonce)
        return [.established(AuthenticatedPeer(
            id: theirID, name: name, key: theirKey,
            verificationCode: SessionMath.verificationCode(
                clientKey: clientKey, serverKey: serverKey, clientNonce: clientNonce, serverNonce: serverNonce),
            encrypted: encrypted, address: address))]
    }

    /// A display name from the network that breaks the rules: control characters dropped, cut to 63 bytes.
    static func sanitized(_ raw: String) -> String {
        var name = String(String.UnicodeScalarView(raw.unicodeScalars.filter { $0.properties.generalCategory != .control }))
        while name.utf8.count > DisplayName.maxBytes { name.removeLast() }
        return name.isEmpty ? "?" : name
    }

    private func transcript(signerIsClient: Bool, theirKey: Data, theirNonce: Data) -> Data {
        let (clientKey, serverKey) = isClient ? (identity.publicKeyDER, theirKey) : (theirKey, identity.publicKeyDER)
        let (clientNonce, serverNonce) = isClient ? (nonce, theirNonce) : (theirNonce, nonce)
        return SessionMath.authTranscript(
            signerIsClient: signerIsClient, clientKey: clientKey, serverKey: serverKey,
            clientNonce: clientNonce, serverNonce: serverNonce)
    }
}

/// Drives the handshake state machine over a connection, with a deadline.
public enum Handshake {
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
        let box = connection.certificateKey
        var machine = HandshakeStateMachine(
            isClient: isClient, identity: identity, displayName: displayName, expected: expected,
            encrypted: connection.encrypted, address: connection.remote,
            certificateKey: { box.key.map { Data($0) } },
            pinned: { (id, key, name) throws(NearbyError) in
                switch try knownPeers.check(id: id, key: key, name: name) {
                case .changed: throw .keyChanged(peer: id.rawValue, knownPeers: knownPeers.path)
                case .known, .new: true
                }
            })
        var actions = machine.start()
        while true {
            for action in actions {
                switch action {
                case let .send(frame): try await outbound.write(frame)
                case let .established(peer): return peer
                }
            }
            guard let frame = try await inbound.next() else { throw HandshakeFailure.closed }
            actions = try machine.received(frame)
        }
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
