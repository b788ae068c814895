import Foundation
import NearbyBase
import NearbyDNS
import Testing
@testable import NearbyWatch

/// Issue 60: what real networks send watch — extension headers, fragments, floods of findings,
/// UTF-8 names, amplifying records, pcapng.
@Suite struct WatchRealTests {
    static let answer = Make.response([Make.a("frag.local.", [10, 99, 0, 3])])

    /// An IPv4 packet (no link header) carrying `body` (UDP header and payload, or a piece of it).
    static func ipv4(_ body: [UInt8], id: UInt16 = 7, offset: Int = 0, more: Bool = false) -> [UInt8] {
        let total = 20 + body.count
        let field = UInt16(offset / 8) | (more ? 0x2000 : 0)
        return [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), UInt8(id >> 8), UInt8(id & 0xFF), UInt8(field >> 8), UInt8(field & 0xFF), 255, 17, 0, 0,
                10, 99, 0, 3, 224, 0, 0, 251] + body
    }

    static func udp(_ payload: [UInt8]) -> [UInt8] {
        let length = 8 + payload.count
        return [0x14, 0xE9, 0x14, 0xE9, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0] + payload
    }

    /// An IPv6 packet whose payload is `extensions` (each a next-header code and its bytes) then `body`.
    static func ipv6(_ body: [UInt8], first: UInt8, _ extensions: [[UInt8]] = []) -> [UInt8] {
        let payload = extensions.flatMap { $0 } + body
        return [0x60, 0, 0, 0, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF), first, 255]
            + [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [3] + [0xFF, 0x02] + [UInt8](repeating: 0, count: 13) + [0xFB] + payload
    }

    static func fragmentHeader(next: UInt8, offset: Int, more: Bool, id: UInt32 = 9) -> [UInt8] {
        let field = UInt16(offset) | (more ? 1 : 0)
        return [next, 0, UInt8(field >> 8), UInt8(field & 0xFF), UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)]
    }

    /// A 2,567-byte answer (an A record and a long TXT), as a responder sends it over a 1500-byte link.
    static var bigAnswer: [UInt8] {
        var message = Make.response([Make.a("big.local.", [10, 99, 0, 3]),
                                     Make.record("big._http._tcp.local.", .txt, ttl: 4500, .txt((0..<10).map { _ in [UInt8](repeating: 0x61, count: 250) }))])
        message.id = 0
        return try! message.encode()
    }

    @Test func ipv6BehindDestinationOptionsHopByHopAndAnAtomicFragmentIsDecoded() throws {
        let body = Self.udp(try Self.answer.encode())
        let padN: [UInt8] = [1, 4, 0, 0, 0, 0]
        for (first, extensions) in [(UInt8(60), [[17, 0] + padN]), (0, [[60, 0] + padN, [17, 0] + padN]),
                                    (44, [Self.fragmentHeader(next: 17, offset: 0, more: false)])] {
            var reader = FrameReader()
            let read = reader.datagram(Self.ipv6(body, first: first, extensions)[...], link: .rawIP, time: 0)
            let datagram = try #require(read)
            #expect(datagram.complete && !datagram.fragmented && datagram.source == "fe80::3")
            #expect(Self.filterAccepts(Self.ipv6(body, first: first, extensions), ethertype: 0x86DD))
        }
    }

    @Test func ipv4FragmentsAreReassembledInAnyOrder() throws {
        let body = Self.udp(Self.bigAnswer)
        let pieces = [(0, Array(body[0..<1480]), true), (1480, Array(body[1480...]), false)]
        for order in [[0, 1], [1, 0]] {
            var reader = FrameReader()
            var got: [UDPDatagram] = []
            for index in order {
                let (offset, data, more) = pieces[index]
                let packet = Self.ipv4(data, offset: offset, more: more)
                #expect(Self.filterAccepts(packet, ethertype: 0x0800))
                if let datagram = reader.datagram(packet[...], link: .rawIP, time: Double(index)) { got.append(datagram) }
            }
            #expect(got.count == 1 && got.first?.payload == Self.bigAnswer && got.first?.fragmented == true && reader.inProgress == 0)
            var engine = WatchEngine()
            let whole = try #require(got.first)
            let out = engine.process(whole, time: 1, interface: "nb0")
            #expect(out.contains { if case let .packet(packet) = $0 { packet.answers.first?.name == "big.local." } else { false } })
            #expect(out.contains { if case let .finding(finding) = $0 { finding.rule == "oversize" } else { false } })
        }
    }

    @Test func ipv6FragmentsAreReassembled() throws {
        let body = Self.udp(Self.bigAnswer)
        var reader = FrameReader()
        let first = Self.ipv6(Array(body[0..<1232]), first: 44, [Self.fragmentHeader(next: 17, offset: 0, more: true)])
        let second = Self.ipv6(Array(body[1232...]), first: 44, [Self.fragmentHeader(next: 17, offset: 1232, more: false)])
        #expect(reader.datagram(second[...], link: .rawIP, time: 0) == nil)
        let read = reader.datagram(first[...], link: .rawIP, time: 0.1)
        let datagram = try #require(read)
        #expect(datagram.payload == Self.bigAnswer && datagram.source == "fe80::3")
    }

    @Test func reassemblyIsBoundedAndRefusesOverlaps() {
        var reader = FrameReader()
        // Overlapping pieces: the datagram is dropped, never put together from either.
        _ = reader.datagram(Self.ipv4([UInt8](repeating: 1, count: 16), id: 1, offset: 0, more: true)[...], link: .rawIP, time: 0)
        #expect(reader.datagram(Self.ipv4([UInt8](repeating: 2, count: 16), id: 1, offset: 8, more: false)[...], link: .rawIP, time: 0) == nil)
        #expect(reader.abandoned == 1)
        // A flood of first fragments that never finish: at most maxDatagrams held, and they time out.
        for id in 0..<1000 {
            _ = reader.datagram(Self.ipv4([UInt8](repeating: 0, count: 1000), id: UInt16(id), offset: 0, more: true)[...], link: .rawIP, time: 1)
        }
        #expect(reader.inProgress <= FrameReader.maxDatagrams)
        _ = reader.datagram(Self.ipv4(Self.udp([0]), id: 5000)[...], link: .rawIP, time: 1 + FrameReader.timeout + 1)
        #expect(reader.inProgress == 0)
    }

    /// Runs the capture's BPF program (classic BPF, the instructions it uses) on an IP packet.
    static func filterAccepts(_ packet: [UInt8], ethertype: UInt32) -> Bool {
        var a: UInt32 = 0, x: UInt32 = 0, pc = 0
        func load(_ offset: Int, _ size: Int) -> UInt32? {
            guard offset >= 0, offset + size <= packet.count else { return nil }
            return packet[offset..<offset + size].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        while pc < PacketCapture.filter.count {
            let instruction = PacketCapture.filter[pc]
            pc += 1
            switch instruction.code {
            case 0x28: guard let value = instruction.k == 0xFFFF_F000 ? ethertype : load(Int(instruction.k), 2) else { return false }; a = value
            case 0x30: guard let value = load(Int(instruction.k), 1) else { return false }; a = value
            case 0x48: guard let value = load(Int(x) + Int(instruction.k), 2) else { return false }; a = value
            case 0xB1: guard let value = load(Int(instruction.k), 1) else { return false }; x = (value & 0x0F) * 4
            case 0x15: pc += Int(a == instruction.k ? instruction.jumpTrue : instruction.jumpFalse)
            case 0x45: pc += Int(a & instruction.k != 0 ? instruction.jumpTrue : instruction.jumpFalse)
            case 0x06: return instruction.k > 0
            default: return false
            }
        }
        return false
    }

    @Test func theFilterStillRefusesOtherTraffic() {
        var other = Self.ipv4(Self.udp([0]))
        other[20] = 0; other[21] = 53; other[22] = 0; other[23] = 53  // DNS, not mDNS
        #expect(!Self.filterAccepts(other, ethertype: 0x0800))
        #expect(Self.filterAccepts(Self.ipv4(Self.udp([0])), ethertype: 0x0800))
        #expect(!Self.filterAccepts(Self.ipv6(Self.udp([0]), first: 6), ethertype: 0x86DD))  // TCP
    }

    /// 1,000 malformed packets from 1,000 sources, then a real conflict: the conflict prints. One
    /// host's flood of TTL findings, then another host's rename: the rename prints.
    @Test func noiseNeverHidesAnotherFault() {
        var engine = WatchEngine()
        var printed: [Events.Finding] = []
        func run(_ datagram: UDPDatagram, _ time: Double) {
            for case let .finding(finding) in engine.process(datagram, time: time, interface: "nb0") { printed.append(finding) }
        }
        run(Make.datagram(RuleTests.h1, from: "10.99.0.1"), 0)
        for index in 0..<1000 {
            run(UDPDatagram(source: "10.1.\(index / 256).\(index % 256)", sourcePort: 5353, destination: "224.0.0.251", destinationPort: 5353,
                            payload: [0, 0, 0x84, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3], claimedLength: 13, fragmented: false), 1 + Double(index) * 0.001)
        }
        run(Make.datagram(Make.response([Make.a("h1.local.", [10, 99, 0, 3])]), from: "10.99.0.3"), 3)
        #expect(engine.malformed == 1000)
        #expect(printed.contains { $0.rule == "conflict" && $0.host == "10.99.0.3" })
        #expect(printed.filter { $0.rule == "malformed" }.count <= FindingBudget.perRule)
        for index in 0..<1050 {
            let records = (0..<50).map { Make.a("t\(index)-\($0).local.", [10, 99, 0, 4], ttl: 1) }
            run(Make.datagram(Make.response(records), from: "10.99.0.4"), 4 + Double(index) * 0.001)
        }
        #expect(printed.filter { $0.rule == "ttl" }.count == FindingBudget.perHost)
        run(Make.datagram(Make.response([Make.a("h5.local.", [10, 99, 0, 5])]), from: "10.99.0.5"), 6)
        run(Make.datagram(Make.response([Make.a("h5-2.local.", [10, 99, 0, 6])]), from: "10.99.0.6"), 6.1)
        #expect(printed.contains { $0.rule == "rename" && $0.host == "10.99.0.6" })
        #expect(engine.summary(dropped: 0).findingsSuppressed > 0)
    }

    @Test func namesAreShownAsPeopleWroteThem() throws {
        let name = try DNSName(labels: [Array("Küche’s TV".utf8), Array("_airplay".utf8), Array("_tcp".utf8), Array("local".utf8)])
        #expect(name.shown == "Küche’s TV._airplay._tcp.local.")
        let hostile = try DNSName(labels: [[0x1B, 0x5B, 0x32, 0x4A] + Array("\u{202E}x.y".utf8) + [0xFF], Array("local".utf8)])
        #expect(hostile.shown == "\\027[2J\\226\\128\\174x\\.y\\255.local.")
        let record = Make.record(name.description, .txt, ttl: 4500, .txt([Array("n=Küche’s TV".utf8)]))
        #expect(RecordText.record(record).data == "\"n=Küche’s TV\"")
        let line = EventEncoder().line(WatchEngine.packet(Observation(time: 0, interface: nil, source: "10.0.0.1",
            message: Make.response([Make.ptr("_airplay._tcp.local.", "Küche’s TV._airplay._tcp.local.")]), size: 1), destination: "224.0.0.251"),
            at: Date(timeIntervalSince1970: 0))
        #expect(line.contains("Küche’s TV._airplay._tcp.local.") && !line.contains("\\195"))
    }

    /// One 1,404-byte NSEC answer (a bitmap naming thousands of types): at most 16 KB of JSON; whole with --full.
    @Test func anNSECAnswerIsBoundedJSON() throws {
        let types = (1...11_000).map { DNSType(rawValue: UInt16($0)) }
        var message = Make.response([Make.record("n.local.", .nsec, .nsec(next: Make.name("n.local."), types: types))])
        message.id = 0
        let bytes = try message.encode()
        var engine = WatchEngine()
        let datagram = UDPDatagram(source: "10.0.0.1", sourcePort: 5353, destination: "224.0.0.251", destinationPort: 5353,
                                   payload: bytes, claimedLength: bytes.count, fragmented: false)
        for case let .packet(packet) in engine.process(datagram, time: 0, interface: nil) {
            let line = EventEncoder().line(packet, at: Date(timeIntervalSince1970: 0))
            #expect(line.utf8.count <= 16_384, "\(bytes.count) bytes became \(line.utf8.count) of JSON")
            #expect(packet.answers.first?.data.contains("more types") == true)
        }
        var full = WatchEngine(full: true)
        for case let .packet(packet) in full.process(datagram, time: 0, interface: nil) {
            #expect(packet.answers.first?.data.contains("TYPE11000") == true)
        }
    }

    /// A pcapng file (section, interface with microsecond and nanosecond resolution, enhanced and
    /// simple packets), in both byte orders.
    @Test func pcapngIsRead() throws {
        let payload = try Self.answer.encode()
        for bigEndian in [false, true] {
            func u32(_ value: UInt32) -> [UInt8] {
                let be = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
                return bigEndian ? be : be.reversed()
            }
            func u16(_ value: UInt16) -> [UInt8] { bigEndian ? [UInt8(value >> 8), UInt8(value & 0xFF)] : [UInt8(value & 0xFF), UInt8(value >> 8)] }
            func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
                let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
                return u32(type) + u32(UInt32(12 + padded.count)) + padded + u32(UInt32(12 + padded.count))
            }
            let frame = Make.ethernetIPv4(payload)
            let stamp = UInt64(1_700_000_000_500_000_000)
            var file = block(0x0A0D_0D0A, u32(0x1A2B_3C4D) + u16(1) + u16(0) + [UInt8](repeating: 0xFF, count: 8))
            file += block(1, u16(1) + u16(0) + u32(0) + u16(9) + u16(1) + [9, 0, 0, 0] + u16(0) + u16(0))  // Ethernet, ns
            file += block(5, [1, 2, 3, 4])  // a statistics block: skipped
            file += block(6, u32(0) + u32(UInt32(stamp >> 32)) + u32(UInt32(stamp & 0xFFFF_FFFF)) + u32(UInt32(frame.count)) + u32(UInt32(frame.count)) + frame)
            file += block(3, u32(UInt32(frame.count)) + frame)
            var reader = try PcapReader(PcapBytes(file))
            let first = try #require(try reader.next())
            #expect(abs(first.time - 1_700_000_000.5) < 1e-3 && first.link == .ethernet)
            #expect(FrameParser.datagram(first.bytes[...], link: first.link)?.payload == payload)
            #expect(try reader.next()?.bytes == frame)
            #expect(try reader.next() == nil)
        }
    }
}
