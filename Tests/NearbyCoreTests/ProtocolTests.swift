import Foundation
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyControl
@testable import NearbyIdentity
@testable import NearbyWire

@Suite struct FrameTests {
    private func bytes(_ frame: Frame) -> ByteBuffer {
        var out = ByteBuffer()
        FrameEncoder.write(frame, into: &out)
        return out
    }

    @Test func roundTripAndPartialInput() throws {
        let frame = Frame(kind: .message, channel: 0, payload: ByteBuffer(string: "hello"))
        var buffer = bytes(frame)
        #expect(buffer.readableBytes == Frame.headerSize + 5)
        var partial = buffer.getSlice(at: 0, length: 10) ?? ByteBuffer()
        #expect(try FrameDecoder.parse(&partial) == nil)
        #expect(try FrameDecoder.parse(&buffer) == frame)
        #expect(buffer.readableBytes == 0)
    }

    @Test func oversizedFrameIsRefusedFromItsHeader() {
        var header = ByteBuffer()
        header.writeInteger(Frame.Kind.message.rawValue)
        header.writeInteger(UInt32(0))
        header.writeInteger(UInt32(Frame.maxPayload + 1))
        #expect(throws: ProtocolViolation.frameTooLarge(Frame.maxPayload + 1)) { try FrameDecoder.parse(&header) }
        var garbage = ByteBuffer(bytes: [0xEE, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(throws: ProtocolViolation.unknownFrameType(0xEE)) { try FrameDecoder.parse(&garbage) }
    }

    @Test func controlFramesAreBoundedAndChecked() throws {
        let invite = FrameBody.Invite(invitation: "abc", context: "ctx", timeout: 30)
        #expect(try FrameBody.decode(FrameBody.Invite.self, from: FrameBody.frame(.invite, invite)) == invite)
        let junk = Frame(kind: .invite, payload: ByteBuffer(string: "{not json"))
        #expect(throws: ProtocolViolation.self) { try FrameBody.decode(FrameBody.Invite.self, from: junk) }
        let huge = Frame(kind: .invite, payload: ByteBuffer(repeating: UInt8(ascii: " "), count: Frame.maxBodyPayload + 1))
        #expect(throws: ProtocolViolation.self) { try FrameBody.decode(FrameBody.Invite.self, from: huge) }
    }
}

@Suite struct NegotiationTests {
    @Test func mpcEncryptionRules() {
        let table: [(EncryptionPreference, EncryptionPreference, Bool?)] = [
            (.required, .required, true), (.required, .optional, true), (.required, .none, nil),
            (.optional, .required, true), (.optional, .optional, true), (.optional, .none, false),
            (.none, .required, nil), (.none, .optional, false), (.none, .none, false),
        ]
        for (a, b, expected) in table {
            #expect(a.agree(with: b) == expected, "\(a) with \(b)")
            #expect(b.agree(with: a) == expected, "symmetric: \(b) with \(a)")
        }
        #expect(Preamble.decide(server: .required, client: .none) == .refusedRequired)
        #expect(Preamble.decide(server: .none, client: .required) == .refusedNone)
        #expect(Preamble.decide(server: .optional, client: .none) == .plaintext)
    }

    @Test func preambleTellsNearbyFromForeignClients() {
        #expect(Preamble.parseClient(Preamble.hello(.optional)) == .nearby(.optional))
        #expect(Preamble.parseServer(Preamble.reply(.tls)) == .tls)
        guard case let .foreign(what) = Preamble.parseClient([0x16, 0x03, 0x01, 0x00, 0x10]) else {
            Issue.record("a TLS ClientHello is not nearby")
            return
        }
        #expect(what.contains("TLS"))
        guard case let .foreign(text) = Preamble.parseClient(Array("GET /".utf8)) else {
            Issue.record("HTTP is not nearby")
            return
        }
        #expect(text.contains("GET"))
        guard case .foreign = Preamble.parseClient(Preamble.magic + [9]) else {
            Issue.record("an unknown preference is refused")
            return
        }
    }

    @Test func verificationCodeIsSharedAndSessionBound() {
        let a = Data("key-a".utf8), b = Data("key-b".utf8)
        let n1 = Data(repeating: 1, count: 32), n2 = Data(repeating: 2, count: 32)
        let code = SessionMath.verificationCode(clientKey: a, serverKey: b, clientNonce: n1, serverNonce: n2)
        #expect(code.wholeMatch(of: /[0-9]{3} [0-9]{3}/) != nil)
        #expect(code == SessionMath.verificationCode(clientKey: a, serverKey: b, clientNonce: n1, serverNonce: n2))
        #expect(code != SessionMath.verificationCode(clientKey: a, serverKey: b, clientNonce: n2, serverNonce: n1))
        let client = SessionMath.authTranscript(signerIsClient: true, clientKey: a, serverKey: b, clientCommitment: n1, serverCommitment: n2)
        let server = SessionMath.authTranscript(signerIsClient: false, clientKey: a, serverKey: b, clientCommitment: n1, serverCommitment: n2)
        #expect(client != server)
    }

    @Test func crossedInvitationsKeepExactlyOne() throws {
        let x = try #require(PeerID("0000000000001")), y = try #require(PeerID("0000000000002"))
        #expect(SessionMath.keepsOwnInvitation(own: x, other: y) != SessionMath.keepsOwnInvitation(own: y, other: x))
    }

    @Test func hostPortTargets() {
        #expect(Node.parseHostPort("10.0.0.1:4000")! == ("10.0.0.1", 4000))
        #expect(Node.parseHostPort("[fe80::1%eth0]:22")! == ("fe80::1%eth0", 22))
        #expect(Node.parseHostPort("box.local:80")! == ("box.local", 80))
        #expect(Node.parseHostPort("alice") == nil)
        #expect(Node.parseHostPort("alice:0") == nil)
        #expect(Node.parseHostPort(":80") == nil)
        #expect(Node.parseHostPort("x:99999") == nil)
    }
}

@Suite struct KnownPeersTests {
    private func fresh() -> (KnownPeers, String) {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-known-\(UUID().uuidString)").path
        return (KnownPeers(paths: NearbyPaths(home: home)), home)
    }

    @Test func pinsOnlyWhenAskedAndRefusesAChangedKey() throws {
        let (known, _) = fresh()
        let id = try #require(PeerID("0000000000001"))
        #expect(try known.verify(id: id, key: Data([1, 2, 3])) == .new)
        #expect(!FileManager.default.fileExists(atPath: known.path))  // checking pins nothing
        #expect(try known.pin(id: id, key: Data([1, 2, 3]), name: "a") == .new)
        #expect(try known.verify(id: id, key: Data([1, 2, 3])) == .known)
        #expect(try known.pin(id: id, key: Data([1, 2, 3]), name: "a") == .known)
        #expect(try known.verify(id: id, key: Data([9, 9, 9])) == .changed)
        #expect(try known.pin(id: id, key: Data([9, 9, 9]), name: "a") == .changed)
        let attributes = try FileManager.default.attributesOfItem(atPath: known.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: known.path, encoding: .utf8).split(separator: "\n").count == 1)
    }

    @Test func anUnreadableOrInvalidFileFailsClosedAndIsKept() throws {
        let id = try #require(PeerID("0000000000001"))
        for content in [Data([0xFF, 0xFE, 0x0A]), Data("not a pin line\n".utf8), Data("0000000000002 !!! x\n".utf8)] {
            let (known, home) = fresh()
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            try content.write(to: URL(fileURLWithPath: known.path))
            let error = #expect(throws: NearbyError.self) { try known.verify(id: id, key: Data([1])) }
            #expect(error?.errorDescription?.contains(known.path) == true)
            #expect(throws: NearbyError.self) { try known.pin(id: id, key: Data([1]), name: "a") }
            #expect(try Data(contentsOf: URL(fileURLWithPath: known.path)) == content)
        }
    }

    @Test func aSymlinkIsNotFollowed() throws {
        let (known, home) = fresh()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let target = home + "/elsewhere"
        try Data().write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: known.path, withDestinationPath: target)
        let id = try #require(PeerID("0000000000001"))
        #expect(throws: NearbyError.self) { try known.pin(id: id, key: Data([1]), name: "a") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)).isEmpty)
    }

    @Test func aChangedFileIsReadAgain() throws {
        let (known, _) = fresh()
        let a = try #require(PeerID("0000000000001")), b = try #require(PeerID("0000000000002"))
        #expect(try known.pin(id: a, key: Data([1]), name: "a") == .new)
        #expect(try known.verify(id: b, key: Data([2])) == .new)
        let handle = try #require(FileHandle(forWritingAtPath: known.path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("0000000000002 \(Data([3]).base64EncodedString()) b\n".utf8))
        try handle.close()
        #expect(try known.verify(id: b, key: Data([2])) == .changed)
    }
}

@Suite struct RunDirectoryTests {
    private func scratch() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-run-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func createsAPrivateDirectoryAndRefusesAnOpenOne() throws {
        let base = try scratch()
        try RunDirectory.prepare(base + "/nearby")
        let mode = try FileManager.default.attributesOfItem(atPath: base + "/nearby")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o700)
        try RunDirectory.prepare(base + "/nearby")  // ours: fine again
        chmod(base + "/nearby", 0o755)
        #expect(throws: NearbyError.self) { try RunDirectory.prepare(base + "/nearby") }
        try FileManager.default.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/nearby")
        chmod(base + "/nearby", 0o700)
        #expect(throws: NearbyError.self) { try RunDirectory.prepare(base + "/link") }
    }

    @Test func aSymlinkedLockIsRefusedAndItsTargetKept() throws {
        let base = try scratch()
        try RunDirectory.prepare(base + "/nearby")
        let victim = base + "/victim"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: base + "/nearby/x.lock", withDestinationPath: victim)
        #expect(throws: NearbyError.self) { _ = try RunDirectory.openLock(base + "/nearby/x.lock") }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
    }
}

@Suite struct AdmissionTests {
    @Test func capsPerAddressAndGivesPlacesBackOnce() {
        let gate = Admission(total: 4, perAddress: 2)
        let a1 = gate.admit("10.0.0.1"), a2 = gate.admit("10.0.0.1")
        #expect(a1 != nil && a2 != nil)
        #expect(gate.admit("10.0.0.1") == nil)
        a1?.release()
        a1?.release()  // once only
        #expect(gate.held == 1)
        let a3 = gate.admit("10.0.0.1")
        #expect(a3 != nil)
        #expect(gate.admit("10.0.0.1") == nil)
        // A held ticket and its gate hold each other (a connection's close gives it back).
        for ticket in [a2, a3] { ticket?.release() }
        #expect(gate.held == 0)
    }

    @Test func aFullGateEvictsTheOldestPlaceOfTheHeaviestAddress() {
        let gate = Admission(total: 4, perAddress: 3)
        let evicted = Locked<[String]>([])
        var admitted: [Admission.Ticket] = []
        // A held ticket and its gate hold each other (a connection's close gives it back).
        defer { for ticket in admitted { ticket.release() } }
        func admit(_ address: String, _ name: String) -> Admission.Ticket? {
            let ticket = gate.admit(address)
            ticket?.onEvict { evicted.withLock { $0.append(name) } }
            if let ticket { admitted.append(ticket) }
            return ticket
        }
        let attacker = (1...3).map { admit("10.0.0.66", "a\($0)") }
        let other = admit("10.0.0.7", "b1")
        #expect(attacker.allSatisfy { $0 != nil } && other != nil && gate.held == 4)
        // A real peer from a new address: the attacker's oldest place makes room.
        let real = admit("10.0.0.2", "real")
        #expect(real != nil)
        #expect(evicted.withLock { $0 } == ["a1"])
        attacker[0]?.release()  // the evicted place is not given back twice
        #expect(gate.held == 4)
        // Now every address holds at most two: 10.0.0.7 (one) evicts again, 10.0.0.66 cannot.
        #expect(admit("10.0.0.66", "a4") == nil)
        #expect(admit("10.0.0.7", "b2") != nil)
        #expect(evicted.withLock { $0 } == ["a1", "a2"])
        #expect(admit("10.0.0.7", "b3") == nil)  // equal with the heaviest: no churn
    }
}

@Suite struct AdmissionTableTests {
    @Test func tiesEvictTheOldestPlace() {
        var table = AdmissionTable(total: 3, perAddress: 1)
        guard case let .admitted(first, nil) = table.admit("a") else { Issue.record("a"); return }
        _ = table.admit("b")
        _ = table.admit("c")
        let newcomer = table.admit("d"), again = table.admit("d")
        #expect(newcomer == .admitted(4, evicting: .init(address: "a", serial: first)))
        #expect(again == .refusedAddress)
        #expect(table.count == 3)
        let removedTwice = table.remove(.init(address: "a", serial: first))
        #expect(!removedTwice)
    }

    @Test func neverHoldsMoreThanItsCapsWhateverComes() {
        var table = AdmissionTable(total: 16, perAddress: 4)
        var held: [AdmissionTable.Place] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            if !held.isEmpty, Bool.random(using: &generator) {
                let place = held.remove(at: Int.random(in: 0..<held.count, using: &generator))
                let removed = table.remove(place)
                #expect(removed)
            } else {
                let address = "10.0.0.\(Int.random(in: 0..<8, using: &generator))"
                if case let .admitted(serial, evicting) = table.admit(address) {
                    if let evicting { held.removeAll { $0 == evicting } }
                    held.append(.init(address: address, serial: serial))
                }
            }
            #expect(table.count == held.count && table.count <= 16)
            #expect(table.byAddress.values.allSatisfy { $0.count <= 4 })
        }
    }
}

/// Two real nodes in this process, over loopback TCP and TLS: no daemon needed, since HOST:PORT
/// skips discovery.
@Suite(.serialized, .timeLimit(.minutes(5))) struct NodeLoopbackTests {
    private func node(_ name: String, _ configure: (inout NodeConfiguration) -> Void = { _ in }) async throws -> (Node, MemorySink) {
        let made = try await TestNodes.make(name, configure)
        return (made.node, made.events)
    }

    private func waitFor(_ sink: MemorySink, _ text: String) async -> Bool {
        await TestNodes.waitFor(sink, text)
    }

    @Test func inviteAcceptMessageGoodbye() async throws {
        let (bob, bobEvents) = try await node("bob") { $0.autoAccept = true }
        let (alice, aliceEvents) = try await node("alice")
        let port = await bob.port
        let peer = try await alice.invite("127.0.0.1:\(port)", context: "hi", timeout: TestNodes.patience, client: nil)
        #expect(peer.name == "bob")
        #expect(peer.encrypted)
        try await alice.sendMessage(Array("héllo".utf8), to: [peer.id.rawValue], all: false, unreliable: false, timeout: TestNodes.patience, client: nil)
        try await alice.sendMessage([0xff, 0x00], to: [peer.id.rawValue], all: false, unreliable: false, timeout: TestNodes.patience, client: nil)
        #expect(await waitFor(bobEvents, #""text":"héllo""#))
        #expect(await waitFor(bobEvents, #""data":"/wA=""#))
        let invitation = try #require(bobEvents.lines.first { $0.contains(#""event":"invitation""#) })
        let connected = try #require(aliceEvents.lines.first { $0.contains(#""event":"invited""#) })
        let code = try #require(invitation.firstMatch(of: /"verification_code":"([0-9 ]+)"/)?.1)
        #expect(connected.contains(#""verification_code":"\#(code)""#))
        await alice.stop(reason: "done here")
        #expect(await waitFor(bobEvents, #""reason":"peer left: done here""#))
        await bob.stop()
    }

    /// Messages arrive whole and in the order they were sent, whether they take the event loop's
    /// shortcut or wait for the node behind frames it is still handling.
    @Test func aBurstOfMessagesArrivesWholeAndInOrder() async throws {
        let (bob, bobEvents) = try await node("bob") { $0.autoAccept = true }
        let (alice, _) = try await node("alice")
        let peer = try await alice.invite("127.0.0.1:\(await bob.port)", context: nil, timeout: TestNodes.patience, client: nil)
        let count = 3000
        for index in 0..<count {
            try await alice.sendMessage(Array("m\(index)".utf8), to: [peer.id.rawValue], all: false, unreliable: false, timeout: TestNodes.patience, client: nil)
        }
        #expect(await TestNodes.waitFor(bobEvents, #""text":"m\#(count - 1)""#))
        let texts = bobEvents.lines.compactMap { $0.firstMatch(of: /"event":"message".*"text":"(m[0-9]+)"/).map { String($0.1) } }
        #expect(texts == (0..<count).map { "m\($0)" })
        await alice.stop()
        await bob.stop()
    }

    @Test func encryptionRequiredAndNoneRefuseEachOther() async throws {
        let (plain, plainEvents) = try await node("plain") {
            $0.autoAccept = true
            $0.encryption = .none
        }
        let (strict, _) = try await node("strict")
        let port = await plain.port
        await #expect(throws: NearbyError.encryptionMismatch(ours: "required", theirs: "none")) {
            try await strict.invite("127.0.0.1:\(port)", context: nil, timeout: TestNodes.patience, client: nil)
        }
        #expect(await waitFor(plainEvents, #""code":"encryption-mismatch""#))
        let (relaxed, _) = try await node("relaxed") { $0.encryption = .optional }
        let peer = try await relaxed.invite("127.0.0.1:\(port)", context: nil, timeout: TestNodes.patience, client: nil)
        #expect(peer.encrypted == false)
        for node in [plain, strict, relaxed] { await node.stop() }
    }

    @Test func declinedAndTimedOut() async throws {
        let (host, hostEvents) = try await node("host")
        let (guest, _) = try await node("guest")
        let port = await host.port
        let declining = Task { try await host.accept(nil, decline: true, client: nil) }
        await #expect(throws: NearbyError.self) {
            try await guest.invite("127.0.0.1:\(port)", context: nil, timeout: TestNodes.patience, client: nil)
        }
        _ = try await declining.value
        #expect(await waitFor(hostEvents, #""event":"declined""#))
        do {
            // Long enough for the connection and handshake on a loaded machine: the answer is what times out.
            _ = try await guest.invite("127.0.0.1:\(port)", context: nil, timeout: 3, client: nil)
            Issue.record("an unanswered invitation must time out")
        } catch {
            #expect(error.code == "invitation-timeout")
        }
        await guest.stop()
        await host.stop()
    }
}
