import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyWire

/// Two handshake state machines talking to each other through plain values: no sockets.
@Suite struct HandshakeStateMachineTests {
    let alice = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "alice")
    let bob = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "bob")
    let mallory = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "mallory")

    private func machine(
        _ identity: Identity, client: Bool, expected: PeerID? = nil, encrypted: Bool = false,
        certificate: Data? = nil, pinnedOK: Bool = true
    ) -> HandshakeStateMachine {
        HandshakeStateMachine(
            isClient: client, identity: identity, displayName: identity.displayName, expected: expected,
            encrypted: encrypted, address: "test", certificateKey: { certificate },
            pinned: { _, _, _ in pinnedOK })
    }

    private func frames(_ actions: [HandshakeStateMachine.Action]) -> [Frame] {
        actions.compactMap { if case let .send(frame) = $0 { frame } else { nil } }
    }

    private func established(_ actions: [HandshakeStateMachine.Action]) -> AuthenticatedPeer? {
        actions.lazy.compactMap { if case let .established(peer) = $0 { peer } else { nil } }.first
    }

    /// Runs both machines to completion; returns what each learned about the other.
    private func run(_ client: inout HandshakeStateMachine, _ server: inout HandshakeStateMachine) throws -> (AuthenticatedPeer?, AuthenticatedPeer?) {
        let clientHello = frames(client.start())
        let serverHello = frames(server.start())
        let serverAuth = frames(try server.received(clientHello[0]))
        let clientAuth = frames(try client.received(serverHello[0]))
        let serverDone = established(try server.received(clientAuth[0]))
        let clientDone = established(try client.received(serverAuth[0]))
        return (clientDone, serverDone)
    }

    @Test func bothSidesProveThemselvesAndAgreeOnTheCode() throws {
        var client = machine(alice, client: true, expected: bob.peerID)
        var server = machine(bob, client: false)
        let (bobSeen, aliceSeen) = try run(&client, &server)
        let b = try #require(bobSeen), a = try #require(aliceSeen)
        #expect(b.id == bob.peerID && b.name == "bob")
        #expect(a.id == alice.peerID && a.name == "alice")
        #expect(a.verificationCode == b.verificationCode)
    }

    @Test func theWrongPeerAtTheAddressIsRefused() throws {
        var client = machine(alice, client: true, expected: bob.peerID)
        var server = machine(mallory, client: false)
        let hello = frames(server.start())
        _ = client.start()
        #expect(throws: NearbyError.identityMismatch(expected: bob.peerID.rawValue, got: mallory.peerID.rawValue)) {
            try client.received(hello[0])
        }
    }

    @Test func aClaimedIDMustMatchTheKey() throws {
        var client = machine(alice, client: true)
        _ = client.start()
        let forged = FrameBody.frame(.hello, FrameBody.Hello(
            version: HandshakeStateMachine.version, id: bob.peerID.rawValue, name: "bob", key: mallory.publicKeyDER.base64EncodedString(),
            commitment: Data(count: 32).base64EncodedString()))
        #expect(throws: NearbyError.self) { try client.received(forged) }
    }

    @Test func aReplayedOrForeignSignatureIsRefused() throws {
        // Mallory shows Bob's public key and ID but cannot sign with Bob's private key.
        var client = machine(alice, client: true, expected: bob.peerID)
        _ = client.start()
        let nonce = Data(repeating: 7, count: 32)
        _ = try client.received(FrameBody.frame(.hello, FrameBody.Hello(
            version: HandshakeStateMachine.version, id: bob.peerID.rawValue, name: "bob", key: bob.publicKeyDER.base64EncodedString(),
            commitment: SessionMath.commitment(to: nonce).base64EncodedString())))
        let signature = try mallory.privateKey.signature(for: Data("anything".utf8))
        let auth = FrameBody.frame(.auth, FrameBody.Auth(
            nonce: nonce.base64EncodedString(), signature: signature.derRepresentation.base64EncodedString()))
        #expect(throws: NearbyError.self) { try client.received(auth) }
    }

    @Test func theTLSCertificateMustCarryTheSameKey() throws {
        var client = machine(alice, client: true, encrypted: true, certificate: mallory.publicKeyDER)
        var server = machine(bob, client: false, encrypted: true, certificate: alice.publicKeyDER)
        let hello = frames(server.start())
        _ = client.start()
        #expect(throws: NearbyError.self) { try client.received(hello[0]) }
    }

    @Test func helloCommitsWithoutShowingTheNonce() throws {
        let nonce = Data(repeating: 42, count: 32)
        var client = HandshakeStateMachine(
            isClient: true, identity: alice, displayName: "alice", expected: nil, encrypted: false, address: "test",
            certificateKey: { nil }, pinned: { _, _, _ in true }, nonce: nonce)
        let hello = try #require(frames(client.start()).first)
        let text = String(decoding: hello.payload.readableBytesView, as: UTF8.self)
        #expect(!text.contains(nonce.base64EncodedString()))
        #expect(try FrameBody.decode(FrameBody.Hello.self, from: hello).commitment == SessionMath.commitment(to: nonce).base64EncodedString())
        // The nonce goes out only in auth, which is only sent once the other side's hello (and so
        // its commitment) is in.
        #expect(throws: ProtocolViolation.self) { try client.received(Frame(kind: .auth)) }
    }

    /// The grinding attack: a party in the middle that has seen the other side's nonce picks a new
    /// nonce of its own (its signature, over the commitments, stays valid). Refused.
    @Test func aNonceChangedAfterItsCommitmentIsRefused() throws {
        var client = machine(alice, client: true)
        var server = machine(bob, client: false)
        let clientHello = frames(client.start())
        let serverHello = frames(server.start())
        _ = try server.received(clientHello[0])
        let clientAuth = try #require(frames(try client.received(serverHello[0])).first)
        var auth = try FrameBody.decode(FrameBody.Auth.self, from: clientAuth)
        auth.nonce = Data(repeating: 1, count: 32).base64EncodedString()
        #expect(throws: NearbyError.identityMismatch(expected: alice.peerID.rawValue, got: "a peer whose nonce does not match its commitment")) {
            try server.received(FrameBody.frame(.auth, auth))
        }
        // A nonce of the wrong size is malformed.
        var fresh = machine(bob, client: false)
        _ = fresh.start()
        _ = try fresh.received(clientHello[0])
        auth.nonce = Data(count: 8).base64EncodedString()
        #expect(throws: ProtocolViolation.self) { try fresh.received(FrameBody.frame(.auth, auth)) }
    }

    @Test func theCodeDependsOnBothNonces() throws {
        func code(_ clientNonce: UInt8) throws -> String? {
            var client = HandshakeStateMachine(
                isClient: true, identity: alice, displayName: "alice", expected: nil, encrypted: false, address: "test",
                certificateKey: { nil }, pinned: { _, _, _ in true }, nonce: Data(repeating: clientNonce, count: 32))
            var server = HandshakeStateMachine(
                isClient: false, identity: bob, displayName: "bob", expected: nil, encrypted: false, address: "test",
                certificateKey: { nil }, pinned: { _, _, _ in true }, nonce: Data(repeating: 9, count: 32))
            return try run(&client, &server).0?.verificationCode
        }
        #expect(try code(1) != nil)
        #expect(try code(1) == code(1))
        #expect(try code(1) != code(2))
    }

    @Test func aChangedPinnedKeyIsRefused() throws {
        var client = machine(alice, client: true, pinnedOK: false)
        var server = machine(bob, client: false)
        #expect(throws: NearbyError.self) { _ = try run(&client, &server) }
    }

    @Test func framesOutOfOrderAreProtocolViolations() throws {
        var server = machine(bob, client: false)
        _ = server.start()
        #expect(throws: ProtocolViolation.self) { try server.received(Frame(kind: .message)) }
        #expect(throws: ProtocolViolation.self) { try server.received(Frame(kind: .hello, payload: ByteBuffer(string: "junk"))) }
        var fresh = machine(bob, client: false)
        #expect(throws: ProtocolViolation.self) { try fresh.received(Frame(kind: .ping)) }
    }

    @Test func unrulyNamesAreCleanedNotTrusted() {
        #expect(HandshakeStateMachine.sanitized("a\u{7}b") == "ab")
        #expect(HandshakeStateMachine.sanitized(String(repeating: "é", count: 40)).utf8.count <= 63)
        #expect(HandshakeStateMachine.sanitized("\u{1}") == "?")
    }
}
