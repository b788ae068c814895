import NearbyBase
import NearbyDNS
import PropertyBased
import Testing
@testable import NearbyWatch

@Suite struct DecoderTests {
    static let announcement: DNSMessage = Make.response(
        [Make.ptr("_nearby._tcp.local.", "abc._nearby._tcp.local."),
         Make.srv("abc._nearby._tcp.local.", port: 39339, target: "h2.local."),
         Make.record("abc._nearby._tcp.local.", .txt, ttl: 4500, .txt([Array("_d=Bob".utf8), Array("_nb=1".utf8)]))],
        additional: [Make.a("h2.local.", [10, 99, 0, 2]),
                     Make.record("h2.local.", .nsec, .nsec(next: Make.name("h2.local."), types: [.a, .aaaa]))])

    @Test func mdnsBitsAreRead() throws {
        let message = try DNSMessage.decode(try Self.announcement.encode())
        #expect(message.answers[0].cacheFlush == false)
        #expect(message.answers[1].cacheFlush == true)
        #expect(message.answers[1].rrClass.base == .in)
        #expect(message.additional[1].data == .nsec(next: Make.name("h2.local."), types: [.a, .aaaa]))
        let query = try DNSMessage.decode(try Make.query("_nearby._tcp.local.", unicast: true).encode())
        #expect(query.questions[0].unicastResponse)
        #expect(RecordText.question(query.questions[0]) == Events.WatchQuestion(name: "_nearby._tcp.local.", type: "PTR", class: "IN", unicastResponse: true))
    }

    @Test func recordsArePrintedInPresentationForm() {
        let records = Self.announcement.answers + Self.announcement.additional
        #expect(records.map { RecordText.record($0).data } == [
            "abc._nearby._tcp.local.", "0 0 39339 h2.local.", "\"_d=Bob\" \"_nb=1\"", "10.99.0.2", "h2.local. A AAAA",
        ])
        #expect(RecordText.data(.aaaa([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]), type: .aaaa) == "fe80::1")
        #expect(RecordText.data(.unknown([3, 0x41, 0x52, 0x4D, 5, 0x4C, 0x49, 0x4E, 0x55, 0x58]), type: .hinfo) == "\"ARM\" \"LINUX\"")
        #expect(RecordText.data(.unknown([1, 0xAB]), type: DNSType(rawValue: 99)) == "\\# 2 01ab")
    }

    @Test func meaningsAreDNSSDTerms() {
        let meanings = PacketMeaning.of(Self.announcement)
        #expect(meanings.map(\.kind) == ["announced", "resolved", "address"])
        #expect(meanings[1].host == "h2.local." && meanings[1].port == 39339)
        #expect(meanings[2].addresses == ["10.99.0.2"])
        let goodbye = PacketMeaning.of(Make.response([Make.ptr("_nearby._tcp.local.", "abc._nearby._tcp.local.", ttl: 0)]))
        #expect(goodbye.map(\.kind) == ["withdrawn"])
        #expect(PacketMeaning.of(Make.query("_nearby._tcp.local.")).map(\.kind) == ["question"])
        #expect(PacketMeaning.of(Make.query("_nearby._tcp.local.")).first?.service == "_nearby._tcp.local.")
    }

    /// Random bytes: a message or a reason, never a crash.
    @Test func randomBytesNeverCrash() async {
        await propertyCheck(count: 2000, input: Generator(run: { rng in
            (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        })) { bytes in
            switch MDNSDecoded(bytes) {
            case .message, .malformed: break
            }
            var engine = WatchEngine()
            let datagram = UDPDatagram(source: "10.0.0.1", sourcePort: 5353, destination: "224.0.0.251", destinationPort: 5353,
                                       payload: bytes, claimedLength: bytes.count, fragmented: false)
            _ = engine.process(datagram, time: 1, interface: "eth0")
            #expect(engine.packets == 1)
        }
    }

    /// Every prefix of a real announcement, and every one-byte change of it: decoded or refused.
    @Test func truncatedAndDamagedPacketsAreFindings() throws {
        let bytes = try Self.announcement.encode()
        var engine = WatchEngine()
        for length in 0..<bytes.count {
            guard case .malformed = MDNSDecoded(Array(bytes.prefix(length))) else {
                Issue.record("a prefix of \(length) bytes decoded")
                continue
            }
        }
        for index in bytes.indices {
            for value: UInt8 in [0, 0xC0, 0xFF, bytes[index] ^ 0x80] {
                var damaged = bytes
                damaged[index] = value
                _ = MDNSDecoded(damaged)
                _ = engine.process(Make.datagram(Make.query("x.local."), from: "10.0.0.9"), time: Double(index), interface: nil)
            }
        }
        let findings = WatchEngine().processing(Array(bytes.prefix(20)))
        #expect(findings.first?.rule == "malformed")
    }

    /// Random mutations of a valid packet, cut at random: the engine keeps going.
    @Test func mutatedPacketsNeverCrash() async throws {
        let bytes = try Self.announcement.encode()
        await propertyCheck(count: 2000, input: Generator(run: { rng -> [UInt8] in
            var out = bytes
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                out[Int.random(in: 0..<out.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            return Array(out.prefix(Int.random(in: 0...out.count, using: &rng)))
        })) { mutated in
            switch MDNSDecoded(mutated) {
            case let .message(message): _ = PacketMeaning.of(message)
            case .malformed: break
            }
        }
    }
}

extension WatchEngine {
    /// The findings for one payload from 10.0.0.1.
    func processing(_ payload: [UInt8]) -> [Events.Finding] {
        var engine = self
        let datagram = UDPDatagram(source: "10.0.0.1", sourcePort: 5353, destination: "224.0.0.251", destinationPort: 5353,
                                   payload: payload, claimedLength: payload.count, fragmented: false)
        return engine.process(datagram, time: 0, interface: nil).compactMap { if case let .finding(f) = $0 { f } else { nil } }
    }
}
