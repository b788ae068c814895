import Testing
@testable import NearbyDNS

func hex(_ string: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = string.startIndex
    while index < string.endIndex {
        let next = string.index(index, offsetBy: 2)
        out.append(UInt8(string[index..<next], radix: 16) ?? 0)
        index = next
    }
    return out
}

/// A small seeded generator, so a failing case can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct DNSNameTests {
    @Test func presentationRoundTripsWithEscapes() throws {
        let name = try DNSName(#"My\.Mac\\x._nearby._tcp.example.test."#)
        #expect(name.labels.count == 5)
        #expect(name.labels[0] == Array(#"My.Mac\x"#.utf8))
        #expect(try DNSName(name.description) == name)
        #expect(try DNSName(#"a\032b.test"#).labels[0] == [0x61, 0x20, 0x62])
        #expect(try DNSName(".") == .root)
    }

    @Test func comparesCaseInsensitively() throws {
        #expect(try DNSName("Example.TEST") == DNSName("example.test."))
        #expect(try DNSName("a.example.test").isSubdomain(of: DNSName("EXAMPLE.test")))
        #expect(try !DNSName("example.test").isSubdomain(of: DNSName("a.example.test")))
    }

    @Test func rejectsBadNames() {
        #expect(throws: DNSError.self) { try DNSName("a..b") }
        #expect(throws: DNSError.self) { try DNSName(String(repeating: "x", count: 64) + ".test") }
        #expect(throws: DNSError.self) { try DNSName(Array(repeating: "abcdefghi", count: 26).joined(separator: ".")) }
        #expect(throws: DNSError.self) { try DNSName(#"a\25"#) }
        #expect(throws: DNSError.self) { try DNSName(#"a\999"#) }
    }
}

@Suite struct DNSMessageTests {
    static func sample() throws -> DNSMessage {
        let zone = try DNSName("example.test")
        var message = DNSMessage(id: 0xBEEF)
        message.isResponse = true
        message.authoritative = true
        message.rcode = .nxDomain
        message.questions = [DNSQuestion(name: try DNSName("_nearby._tcp.example.test"), type: .ptr)]
        let instance = try DNSName("abc._nearby._tcp.example.test")
        message.answers = [
            DNSRecord(name: try DNSName("_nearby._tcp.example.test"), type: .ptr, ttl: 60, data: .ptr(instance)),
            DNSRecord(name: instance, type: .srv, ttl: 60, data: .srv(priority: 1, weight: 2, port: 4242, target: try DNSName("h.example.test"))),
            DNSRecord(name: instance, type: .txt, ttl: 60, data: .txt([Array("_d=Ann".utf8), [], Array("_nb=2".utf8)])),
        ]
        message.authority = [DNSRecord(name: zone, type: .soa, ttl: 60, data: .soa(SOAData(
            primary: try DNSName("ns.example.test"), mailbox: try DNSName("admin.example.test"),
            serial: 7, refresh: 1, retry: 2, expire: 3, minimum: 4)))]
        message.additional = [
            DNSRecord(name: try DNSName("h.example.test"), type: .a, ttl: 60, data: .a([10, 99, 0, 1])),
            DNSRecord(name: try DNSName("h.example.test"), type: .aaaa, ttl: 60, data: .aaaa(Array(1...16))),
            DNSRecord(name: try DNSName("h.example.test"), type: DNSType(rawValue: 99), ttl: 60, data: .unknown([1, 2, 3])),
        ]
        return message
    }

    @Test func roundTripsEveryTypeCompressedAndNot() throws {
        let message = try Self.sample()
        let compressed = try message.encode()
        let plain = try message.encode(compress: false)
        #expect(compressed.count < plain.count)
        #expect(try DNSMessage.decode(compressed) == message)
        #expect(try DNSMessage.decode(plain) == message)
    }

    @Test func matchesDnspythonsWireBytes() throws {
        // dnspython 2.x: UpdateMessage("example.test.", id=0x1234) adding an SRV then a PTR.
        let zone = try DNSName("example.test")
        var update = DNSUpdate(zone: zone)
        let instance = try DNSName("abc._nearby._tcp.example.test")
        update.add(DNSRecord(name: instance, type: .srv, ttl: 120, data: .srv(priority: 0, weight: 0, port: 4242, target: try DNSName("h-abc.example.test"))))
        update.add(DNSRecord(name: try DNSName("_nearby._tcp.example.test"), type: .ptr, ttl: 120, data: .ptr(instance)))
        #expect(try update.message(id: 0x1234).encode() == hex(DNSVectors.unsignedUpdate))
    }

    @Test func pointerLoopsAndForwardPointersAreErrors() {
        // Header with one question whose name is a pointer to itself, then to each other.
        let selfLoop: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1]
        #expect(throws: DNSError.self) { try DNSMessage.decode(selfLoop) }
        let forward: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 14, 1, 0x61, 0, 0, 1, 0, 1]
        #expect(throws: DNSError.self) { try DNSMessage.decode(forward) }
        // A chain of 40 backward pointers, each to the one before, ending at a root label.
        var chain: [UInt8] = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        for index in 0..<40 { chain += [0xC0, UInt8(index == 0 ? 12 : 13 + 2 * (index - 1))] }
        var reader = DNSReader(chain, offset: chain.count - 2)
        #expect(throws: DNSError.self) { try reader.name("chain") }
    }

    @Test func countsLargerThanTheMessageAreErrors() {
        let lying: [UInt8] = [0, 1, 0x80, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0]
        #expect(throws: DNSError.self) { try DNSMessage.decode(lying) }
    }

    @Test func everyTruncationIsAnErrorNotACrash() throws {
        let bytes = try Self.sample().encode()
        for length in 0..<bytes.count {
            #expect(throws: DNSError.self) { try DNSMessage.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func randomAndMutatedBytesNeverCrash() throws {
        var random = SplitMix64(state: 0x5EED)
        let valid = try Self.sample().encode()
        var decoded = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            if let message = try? DNSMessage.decode(bytes) {
                decoded += 1
                // Whatever parses must encode and parse back to the same message.
                #expect(try DNSMessage.decode(message.encode()) == message)
            }
        }
        #expect(decoded > 0)
    }

    @Test func overlongLabelsOnTheWireAreErrors() {
        // Label type 0x40 (extended) and 0x80 (reserved) are refused.
        for first: UInt8 in [0x40, 0x80] {
            let bytes: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, first, 0, 0, 1, 0, 1]
            #expect(throws: DNSError.self) { try DNSMessage.decode(bytes) }
        }
        // A name of 5 × 63-byte labels is over 255 bytes.
        var bytes: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for _ in 0..<5 { bytes += [63] + Array(repeating: 0x61, count: 63) }
        bytes += [0, 0, 1, 0, 1]
        #expect(throws: DNSError.self) { try DNSMessage.decode(bytes) }
    }

    @Test func serviceRecordsRegisterAndDeregister() throws {
        let records = ServiceRecords(
            instance: "abc", serviceType: "_nearby._tcp", domain: try DNSName("example.test"), hostLabel: "h-abc",
            port: 4242, txt: [Array("_d=Ann".utf8)], ipv4: [[10, 99, 0, 1]], ipv6: [], ttl: 30)
        let update = try records.register()
        #expect(update.changes.filter { $0.rrClass == .in }.map(\.type) == [.ptr, .srv, .txt, .a])
        let wire = try update.message(id: 1).encode()
        let back = try DNSMessage.decode(wire)
        #expect(back.opcode == DNSOpcode.update.rawValue)
        #expect(back.authority == update.changes)
        let gone = try records.deregister()
        #expect(gone.changes.first?.rrClass == DNSClass.none)
    }
}
