import Crypto
import Foundation
import NIOCore
import NearbyBase
import NearbyIdentity

/// A peer whose identity has been proven in this connection.
package struct AuthenticatedPeer: Sendable, Equatable {
    package let id: PeerID
    package let name: String
    package let key: Data
    package let verificationCode: String
    package let encrypted: Bool
    package let address: String
    /// What the peer said it speaks beyond protocol 2 (its hello's `features`, bounded).
    package let features: [String]

    package var ref: PeerRef { PeerRef(id: id.rawValue, name: name) }
}

/// The first two frames each way, as a pure state machine: `hello` (ID, name, key, a commitment to
/// a nonce), then `auth` (the nonce and a signature over both hellos), sent only once the other's
/// hello is in: neither side can pick its nonce after seeing the other's, so nobody in the middle can
/// grind the verification code. Frames go in, actions come out; no I/O, so both sides are tested
/// against each other without sockets. The checks: the key hashes to the claimed ID, the revealed
/// nonce matches its commitment, the signature is good, the TLS certificate carries the same key, the
/// ID is the one we meant to reach, and a known peer still has its pinned key. Nothing is pinned
/// here: that happens when a session starts.
struct HandshakeStateMachine: Sendable {
    package static let version = 2

    package enum Action: Equatable, Sendable {
        case send(Frame)
        case established(AuthenticatedPeer)
    }

    struct Theirs: Sendable {
        let key: Data
        let commitment: Data
        let id: PeerID
        let name: String
        let features: [String]
    }

    enum State: Sendable {
        case idle
        case awaitingHello
        case awaitingAuth(Theirs)
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
    /// Checks the key against the pins: true when it matches what is known or the peer is unknown.
    let pinned: @Sendable (PeerID, Data, String) throws(NearbyError) -> Bool
    let nonce: Data
    var state = State.idle

    package init(
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

    var commitment: Data { SessionMath.commitment(to: nonce) }

    /// Both sides speak first: our hello, committing to our nonce without showing it.
    package mutating func start() -> [Action] {
        state = .awaitingHello
        return [.send(FrameBody.frame(.hello, FrameBody.Hello(
            version: Self.version, id: identity.peerID.rawValue, name: displayName,
            key: identity.publicKeyDER.base64EncodedString(), commitment: commitment.base64EncodedString(),
            features: FrameBody.features)))]
    }

    package mutating func received(_ message: WireMessage) throws -> [Action] {
        switch (state, message) {
        case let (.awaitingHello, .hello(hello)):
            return try self.hello(hello)
        case (.awaitingHello, _):
            throw ProtocolViolation.unexpected("\(message.kind) frame before hello")
        case let (.awaitingAuth(theirs), .auth(auth)):
            return try authenticated(auth, theirs)
        case (.awaitingAuth, _):
            throw ProtocolViolation.unexpected("\(message.kind) frame before auth")
        case (.idle, _), (.done, _):
            throw ProtocolViolation.unexpected("\(message.kind) frame outside the handshake")
        }
    }

    private mutating func hello(_ hello: FrameBody.Hello) throws -> [Action] {
        guard hello.version == Self.version else {
            throw HandshakeFailure.incompatible("the peer speaks nearby protocol \(hello.version), we speak \(Self.version)")
        }
        guard let theirKey = Data(base64Encoded: hello.key), theirKey.count <= 512,
              let theirCommitment = Data(base64Encoded: hello.commitment), theirCommitment.count == 32,
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
        let theirs = Theirs(key: theirKey, commitment: theirCommitment, id: theirID, name: name, features: FrameBody.bounded(features: hello.features))
        state = .awaitingAuth(theirs)
        let signature = try identity.privateKey.signature(for: transcript(signerIsClient: isClient, theirs))
        return [.send(FrameBody.frame(.auth, FrameBody.Auth(
            nonce: nonce.base64EncodedString(), signature: signature.derRepresentation.base64EncodedString())))]
    }

    private mutating func authenticated(_ auth: FrameBody.Auth, _ theirs: Theirs) throws -> [Action] {
        guard let theirNonce = Data(base64Encoded: auth.nonce), theirNonce.count == 32 else {
            throw ProtocolViolation.malformed("auth frame")
        }
        guard SessionMath.commitment(to: theirNonce) == theirs.commitment else {
            throw NearbyError.identityMismatch(expected: theirs.id.rawValue, got: "a peer whose nonce does not match its commitment")
        }
        guard let der = Data(base64Encoded: auth.signature),
              let signature = try? P256.Signing.ECDSASignature(derRepresentation: der),
              let publicKey = try? P256.Signing.PublicKey(derRepresentation: theirs.key),
              publicKey.isValidSignature(signature, for: transcript(signerIsClient: !isClient, theirs))
        else { throw NearbyError.identityMismatch(expected: theirs.id.rawValue, got: "a peer that cannot sign with its key") }
        guard try pinned(theirs.id, theirs.key, theirs.name) else {
            throw NearbyError.keyChanged(peer: theirs.id.rawValue, knownPeers: "known_peers")
        }
        state = .done
        let (clientKey, serverKey) = isClient ? (identity.publicKeyDER, theirs.key) : (theirs.key, identity.publicKeyDER)
        let (clientNonce, serverNonce) = isClient ? (nonce, theirNonce) : (theirNonce, nonce)
        return [.established(AuthenticatedPeer(
            id: theirs.id, name: theirs.name, key: theirs.key,
            verificationCode: SessionMath.verificationCode(
                clientKey: clientKey, serverKey: serverKey, clientNonce: clientNonce, serverNonce: serverNonce),
            encrypted: encrypted, address: address, features: theirs.features))]
    }

    /// A display name from the network that breaks the rules: what a terminal would not show as
    /// itself (`TerminalText`) dropped, cut to 63 bytes.
    static func sanitized(_ raw: String) -> String {
        let name = String(String.UnicodeScalarView(raw.unicodeScalars.filter(TerminalText.isShowable))).cut(toUTF8Bytes: DisplayName.maxBytes)
        return name.isEmpty ? "?" : name
    }

    private func transcript(signerIsClient: Bool, _ theirs: Theirs) -> Data {
        let (clientKey, serverKey) = isClient ? (identity.publicKeyDER, theirs.key) : (theirs.key, identity.publicKeyDER)
        let (clientCommitment, serverCommitment) = isClient ? (commitment, theirs.commitment) : (theirs.commitment, commitment)
        return SessionMath.authTranscript(
            signerIsClient: signerIsClient, clientKey: clientKey, serverKey: serverKey,
            clientCommitment: clientCommitment, serverCommitment: serverCommitment)
    }
}

/// Drives the handshake state machine over a connection, with a deadline.
enum Handshake {
    /// From the TCP connection to a proven identity — preamble, TLS, hello and auth together — however
    /// slowly the bytes come: 10 s (`NEARBY_HANDSHAKE_DEADLINE` seconds, for tests).
    package static let deadline: TimeAmount = {
        let text = ProcessInfo.processInfo.environment["NEARBY_HANDSHAKE_DEADLINE"]
        guard let seconds = Duration.seconds(parsing: text) else { return .seconds(10) }
        return .nanoseconds(Int64(seconds / .nanoseconds(1)))
    }()
    static var deadlineText: String {
        let milliseconds = deadline.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }

    package static func run(
        inbound: inout NIOAsyncChannelInboundStream<Frame>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<Frame>,
        connection: FrameChannel,
        isClient: Bool,
        identity: Identity,
        displayName: String,
        expected: PeerID?,
        knownPeers: KnownPeers
    ) async throws -> AuthenticatedPeer {
        // A peer that stalls is cut off: closing the channel ends the inbound stream below. The
        // place among links that are not sessions is kept until the link is one (a session).
        let channel = connection.channel.channel
        let timer = channel.eventLoop.scheduleTask(deadline: connection.started + deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        let box = connection.certificateKey
        var machine = HandshakeStateMachine(
            isClient: isClient, identity: identity, displayName: displayName, expected: expected,
            encrypted: connection.encrypted, address: connection.remote,
            certificateKey: { box.withLock { $0 }.map { Data($0) } },
            pinned: { (id, key, _) throws(NearbyError) in
                switch try knownPeers.verify(id: id, key: key) {
                case .changed: throw .keyChanged(peer: id.rawValue, knownPeers: knownPeers.file(pinning: id))
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
            guard let message = try await inbound.nextMessage() else { throw HandshakeFailure.closed }
            actions = try machine.received(message)
        }
    }
}

enum HandshakeFailure: Error, CustomStringConvertible {
    case closed
    case incompatible(String)

    package var description: String {
        switch self {
        case .closed: "the peer closed the connection during the handshake"
        case let .incompatible(why): why
        }
    }
}
