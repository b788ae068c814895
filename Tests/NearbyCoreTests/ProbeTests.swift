import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyDiscovery
@testable import NearbyWire
@testable import NearbyTransfer

/// `nearby doctor`'s probe: the frames on the wire, the hello's `features`, the state machine's
/// rules for a probe, and the words of the `identity` and `peer-sees-us` checks.
@Suite struct ProbeTests {
    private func roundTrip(_ frame: Frame) throws -> Frame? {
        var buffer = ByteBuffer()
        FrameEncoder.write(frame, into: &buffer)
        return try FrameDecoder.parse(&buffer)
    }

    @Test func probeFramesTravelAsSmallJSON() throws {
        let probe = FrameBody.frame(.probe, FrameBody.Probe(instance: "doctor-abc-1234"))
        #expect(Array(probe.payload.readableBytesView.prefix(1)) == Array("{".utf8))
        let back = try #require(try roundTrip(probe))
        #expect(back.kind == .probe && back.channel == 0)
        #expect(try FrameBody.decode(FrameBody.Probe.self, from: back) == FrameBody.Probe(instance: "doctor-abc-1234"))
        #expect(String(decoding: probe.payload.readableBytesView, as: UTF8.self) == #"{"instance":"doctor-abc-1234"}"#)

        let reply = FrameBody.ProbeReply(seen: true, waited: 120, addresses: ["10.99.0.2"])
        let replyBack = try #require(try roundTrip(FrameBody.frame(.probeReply, reply)))
        #expect(replyBack.kind == .probeReply)
        #expect(try FrameBody.decode(FrameBody.ProbeReply.self, from: replyBack) == reply)
        // The type bytes are the documented ones.
        #expect(Frame.Kind.probe.rawValue == 0x09 && Frame.Kind.probeReply.rawValue == 0x0A)
    }

    @Test func aHostileReplyIsBoundedAfterDecoding() {
        let hostile = FrameBody.ProbeReply(
            seen: false, waited: -5, addresses: Array(repeating: "10.0.0.1", count: 100) + [String(repeating: "x", count: 500)],
            reason: String(repeating: "r", count: 5000))
        let bounded = hostile.bounded
        #expect(bounded.addresses.count == 8 && bounded.waited == 0 && bounded.reason?.utf8.count == FrameBody.maxReasonBytes)
    }

    @Test func probeInstancesAreDNSSDLabels() {
        #expect(FrameBody.Probe(instance: "doctor-x-1").isValid)
        #expect(!FrameBody.Probe(instance: "").isValid)
        #expect(!FrameBody.Probe(instance: String(repeating: "a", count: 64)).isValid)
        #expect(!FrameBody.Probe(instance: "a\u{0}b").isValid)
    }

    @Test func helloFeaturesAreOptionalAndBounded() throws {
        // An older node's hello has no `features`: it still decodes, as no features.
        let old = #"{"version":2,"id":"x","name":"n","key":"","commitment":""}"#
        guard case let .hello(hello) = try WireMessage(Frame(kind: .hello, payload: ByteBuffer(string: old))) else {
            Issue.record("an older hello did not decode as a hello")
            return
        }
        #expect(hello.features == nil && FrameBody.bounded(features: hello.features).isEmpty)
        #expect(FrameBody.bounded(features: Array(repeating: "probe", count: 100) + [String(repeating: "f", count: 40)]).count == 16)
        #expect(FrameBody.bounded(features: ["", String(repeating: "f", count: 33), "probe"]) == ["probe"])
    }

    @Test func theHandshakeTellsEachSideWhatTheOtherSpeaks() throws {
        let alice = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "alice")
        let bob = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "bob")
        func machine(_ identity: Identity, client: Bool) -> HandshakeStateMachine {
            HandshakeStateMachine(
                isClient: client, identity: identity, displayName: identity.displayName, expected: nil, encrypted: false,
                address: "test", certificateKey: { nil }, pinned: { _, _, _ in true })
        }
        func sent(_ actions: [HandshakeStateMachine.Action]) -> [Frame] {
            actions.compactMap { if case let .send(frame) = $0 { frame } else { nil } }
        }
        var client = machine(alice, client: true), server = machine(bob, client: false)
        let clientHello = sent(client.start()), serverHello = sent(server.start())
        #expect(try FrameBody.decode(FrameBody.Hello.self, from: clientHello[0]).features == FrameBody.features)
        let serverAuth = sent(try server.received(clientHello[0]))
        let clientAuth = sent(try client.received(serverHello[0]))
        _ = try server.received(clientAuth[0])
        guard case let .established(peer)? = try client.received(serverAuth[0]).last else {
            Issue.record("no handshake")
            return
        }
        #expect(peer.features.contains(FrameBody.probeFeature) && peer.features.contains(Bundle.feature))
    }

    // MARK: The state machine: a probe only instead of an invitation, on a link the peer opened.

    private let probe = FrameBody.frame(.probe, FrameBody.Probe(instance: "doctor-x-1"))

    @Test func aProbeOnAnInboundLinkAwaitingItsInvitationIsLegal() throws {
        var server = SessionStateMachine(inbound: true)
        #expect(try server.received(probe) == [.probe(FrameBody.Probe(instance: "doctor-x-1"))])
        #expect(server.state == .probed)
        // Keepalives still work; a goodbye still ends it.
        #expect(try server.received(Frame(kind: .ping)) == [.send(Frame(kind: .pong))])
        #expect(try server.received(FrameBody.frame(.goodbye, FrameBody.Goodbye(reason: "done"))) == [.close(reason: "peer left: done")])
    }

    @Test func aProbeAnywhereElseIsAViolation() throws {
        // Twice on one link.
        var twice = SessionStateMachine(inbound: true)
        _ = try twice.received(probe)
        #expect(throws: ProtocolViolation.self) { try twice.received(probe) }
        // An invitation after a probe: the probed link never becomes a session.
        let invite = FrameBody.frame(.invite, FrameBody.Invite(invitation: "i", context: nil, timeout: 5))
        #expect(throws: ProtocolViolation.self) { try twice.received(invite) }
        #expect(throws: ProtocolViolation.self) { try twice.received(Frame(kind: .message)) }
        // On a connection we opened.
        var outbound = SessionStateMachine(inbound: false)
        #expect(throws: ProtocolViolation.self) { try outbound.received(probe) }
        var inviting = SessionStateMachine(inbound: false)
        _ = inviting.invite(id: "i", context: nil, timeout: 5)
        #expect(throws: ProtocolViolation.self) { try inviting.received(probe) }
        // After an invitation, and in a session.
        var invited = SessionStateMachine(inbound: true)
        _ = try invited.received(invite)
        #expect(throws: ProtocolViolation.self) { try invited.received(probe) }
        _ = invited.answer(accept: true)
        #expect(invited.state == .connected)
        #expect(throws: ProtocolViolation.self) { try invited.received(probe) }
        // A node never asks, so a reply is always unexpected.
        var stray = SessionStateMachine(inbound: true)
        #expect(throws: ProtocolViolation.self) {
            try stray.received(FrameBody.frame(.probeReply, FrameBody.ProbeReply(seen: true, waited: 1)))
        }
        // A malformed question.
        var malformed = SessionStateMachine(inbound: true)
        #expect(throws: ProtocolViolation.self) { try malformed.received(FrameBody.frame(.probe, FrameBody.Probe(instance: ""))) }
        var garbage = SessionStateMachine(inbound: true)
        #expect(throws: ProtocolViolation.self) { try garbage.received(Frame(kind: .probe, payload: ByteBuffer(string: "[1]"))) }
    }

    // MARK: The checks' words

    @Test func identityOutcomesBecomeChecks() throws {
        let changed = try #require(DoctorCheck.identity(.keyChanged(peer: "abc123", knownPeers: "/home/u/.config/nearby/known_peers"), peer: "Bob"))
        #expect(changed.status == .fail && changed.exitStatus == .identityCheckFailed)
        #expect(changed.detail.contains("pinned key changed") && changed.detail.contains("known_peers"))
        #expect(changed.hint?.contains("sed -i '/^abc123 /d' /home/u/.config/nearby/known_peers") == true)
        let failed = try #require(DoctorCheck.identity(.failed("closed", .connectionFailed), peer: "Bob"))
        #expect(failed.status == .fail && failed.exitStatus == .connectionFailed && failed.detail.contains("handshake"))
        #expect(DoctorCheck.identity(.notRun, peer: "Bob") == nil)
        // Cut short by doctor's --timeout: not judged, so no failure.
        let unfinished = try #require(DoctorCheck.identity(.unfinished, peer: "Bob"))
        #expect(unfinished.status == .warn && unfinished.exitStatus == .success && unfinished.hint?.contains("--timeout") == true)
    }

    @Test func visibilityOutcomesBecomeChecks() throws {
        let seen = try #require(DoctorCheck.peerSeesUs(.answered(.init(seen: true, waited: 40, addresses: ["10.0.0.2"])), peer: "Bob", instance: "d-1", address: "10.0.0.2:4000"))
        #expect(seen.status == .ok && seen.detail.contains("Bob sees this host's announcements"))
        let oneWay = try #require(DoctorCheck.peerSeesUs(.answered(.init(seen: false, waited: 3000)), peer: "Bob", instance: "d-1", address: "10.0.0.2:4000"))
        #expect(oneWay.status == .fail && oneWay.exitStatus == .failure)
        #expect(oneWay.detail.contains("Bob does not see this host: one-way multicast"))
        #expect(oneWay.hint?.contains("UDP 5353") == true && oneWay.hint?.contains(Spelling.command(.invite, "10.0.0.2:4000")) == true)
        let busy = try #require(DoctorCheck.peerSeesUs(.answered(.init(seen: false, waited: 0, reason: "busy")), peer: "Bob", instance: "d-1", address: "10.0.0.2:4000"))
        #expect(busy.status == .warn)
        #expect(DoctorCheck.peerSeesUs(.unsupported, peer: "Bob", instance: "d-1", address: "10.0.0.2:4000")?.status == .warn)
        #expect(DoctorCheck.peerSeesUs(.noAnswer("silence"), peer: "Bob", instance: "d-1", address: "10.0.0.2:4000")?.status == .warn)
        #expect(DoctorCheck.peerSeesUs(.noProbe, peer: "Bob", instance: nil, address: "10.0.0.2:4000")?.status == .warn)
        #expect(DoctorCheck.peerSeesUs(.notAsked, peer: "Bob", instance: nil, address: "10.0.0.2:4000") == nil)
        // Another subnet explains it: skip, not a one-way multicast failure.
        let routed = try #require(DoctorCheck.peerSeesUs(
            .answered(.init(seen: false, waited: 3000)), peer: "Bob", instance: "d-1", address: "10.99.1.1:4000", explained: "another subnet"))
        #expect(routed.status == .skip && routed.exitStatus == .success && routed.detail.contains("another subnet"))
        // The peer's own daemon is down: its words ("this host's") are about itself.
        let down = try #require(DoctorCheck.peerSeesUs(
            .answered(.init(seen: false, waited: 0, reason: DoctorProbe.daemonDown)), peer: "Bob's Pi", instance: "d-1", address: "10.0.0.2:4000"))
        #expect(down.status == .fail && down.exitStatus != .success)
        #expect(down.detail == "Bob's Pi answers at 10.0.0.2:4000 but is not advertised: its DNS-SD daemon does not answer", "\(down.detail)")
    }

    @Test func probesBrowsingAtOnceAreCapped() {
        let slots = DoctorProbe.Slots(limit: 2)
        #expect(slots.take() && slots.take())
        #expect(!slots.take())
        slots.give()
        #expect(slots.take())
        slots.give(); slots.give(); slots.give()
        #expect(slots.take() && slots.take() && !slots.take())
    }

    @Test func theProbeWaitIsConfigurableAndCapped() throws {
        var configuration = NodeConfiguration(service: try ServiceType("nearby"))
        #expect(configuration.probeWait == .seconds(3))
        configuration.apply(environment: ["NEARBY_PROBE_WAIT": "0.5"])
        #expect(configuration.probeWait == .milliseconds(500))
        configuration.apply(environment: ["NEARBY_PROBE_WAIT": "3600"])
        #expect(configuration.probeWait == .seconds(30))
    }
}
