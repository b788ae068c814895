import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyDiscovery

@Suite struct ServiceTypeTests {
    @Test(arguments: ["a", "nearby", "chat-v2", "x1", "abcdefghijklmno", "1a", "a-b-c"])
    func accepts(_ name: String) throws {
        #expect(try ServiceType(name).registrationType == "_\(name)._tcp")
    }

    @Test(arguments: [
        ("", "empty"), ("abcdefghijklmnop", "limit is 15"), ("Chat", "lowercase"), ("chat_v2", "lowercase"),
        ("chat.v2", "lowercase"), ("ch at", "lowercase"), ("12345", "at least one letter"), ("-chat", "hyphen"),
        ("chat-", "hyphen"), ("ch--at", "two hyphens"), ("café", "lowercase"),
    ])
    func refuses(_ name: String, _ rule: String) {
        #expect {
            try ServiceType(name)
        } throws: { error in
            guard case let .invalidServiceType(value, message) = error as? NearbyError else { return false }
            return value == name && message.contains(rule)
        }
    }
}

@Suite struct DisplayNameTests {
    @Test func limits() throws {
        try DisplayName.validate("a")
        try DisplayName.validate(String(repeating: "é", count: 31))  // 62 bytes
        #expect(throws: NearbyError.self) { try DisplayName.validate("") }
        #expect(throws: NearbyError.self) { try DisplayName.validate(String(repeating: "é", count: 32)) }  // 64
        #expect(throws: NearbyError.self) { try DisplayName.validate(String(repeating: "x", count: 64)) }
        #expect(throws: NearbyError.self) { try DisplayName.validate("tab\there") }
        #expect(throws: NearbyError.self) { try DisplayName.validate("   ") }
    }

    @Test func serviceOptionRefusesTheDNSSDFormWithTheShortOne() {
        #expect(throws: NearbyError.invalidServiceType("_chat._tcp", rule: "that is the DNS-SD type; nearby takes the service name: use `\(Spelling.option(.service, "chat"))`")) {
            try ServiceType(option: "_chat._tcp")
        }
        #expect((try? ServiceType(option: "chat"))?.name == "chat")
    }

    @Test func fromHostName() {
        #expect(DisplayName.fromHostName("box.example.org") == "box")
        #expect(DisplayName.fromHostName("") == "nearby")
        #expect(DisplayName.fromHostName(String(repeating: "h", count: 80)).utf8.count == 63)
        let id = PeerID(publicKeyDER: [1, 2, 3])
        #expect(DisplayName.fromHostName("vm", peerID: id) == "vm-\(id.rawValue.prefix(4))")
        #expect(DisplayName.fromHostName(String(repeating: "h", count: 80), peerID: id).utf8.count == 63)
    }
}

@Suite struct TXTRecordTests {
    @Test func roundTripsWithMPCEscaping() throws {
        let record = TXTRecord(
            displayName: "Kitchen Pi", info: ["room": "4.12", "_private": "x", "empty": ""], protocolVersion: "1")
        let wire = try record.encode()
        let entries = record.entries().map { "\($0.key)=\($0.value)" }
        #expect(entries == ["_d=Kitchen Pi", "__private=x", "empty=", "room=4.12", "_nb=1"])
        #expect(TXTRecord.decode(wire) == record)
    }

    @Test func mpcAppHasNoProtocolKey() {
        let wire: [UInt8] = [7] + Array("_d=Anna".utf8) + [5] + Array("k=v=w".utf8)
        let record = TXTRecord.decode(wire)
        #expect(record.protocolVersion == nil)
        #expect(record.displayName == "Anna")
        #expect(record.info == ["k": "v=w"])
    }

    @Test func decodeSurvivesGarbage() {
        #expect(TXTRecord.decode([200, 1, 2]).info.isEmpty)  // length runs past the end
        #expect(TXTRecord.decode([0, 0, 3] + Array("a=b".utf8)).info == ["a": "b"])
        #expect(TXTRecord.decode([4, 0xff, 0xfe, 0x3d, 0x41]).info.count == 1)  // invalid UTF-8 is replaced
        #expect(TXTRecord.decode([3] + Array("_x1".utf8)).info.isEmpty)  // reserved keys are not user info
    }

    @Test func parseInfo() throws {
        #expect(try TXTRecord.parseInfo(["a=1", "b=", "c=x=y"]) == ["a": "1", "b": "", "c": "x=y"])
        #expect(throws: NearbyError.self) { try TXTRecord.parseInfo(["novalue"]) }
        #expect(throws: NearbyError.self) { try TXTRecord.parseInfo(["=v"]) }
        #expect(throws: NearbyError.self) { try TXTRecord.parseInfo(["a=1", "a=2"]) }
    }

    @Test func entryLimit() throws {
        let key = "k"
        let ok = TXTRecord(displayName: "n", info: [key: String(repeating: "v", count: 253)], protocolVersion: "1")
        _ = try ok.encode()  // "k=" + 253 = 255 bytes
        let tooLong = TXTRecord(displayName: "n", info: [key: String(repeating: "v", count: 254)], protocolVersion: "1")
        #expect { try tooLong.encode() } throws: { error in
            (error as? NearbyError)?.errorDescription?.contains("256 bytes") == true
        }
    }

    @Test func recordLimit() throws {
        var info: [String: String] = [:]
        for index in 0..<4 { info["k\(index)"] = String(repeating: "v", count: 100) }
        let record = TXTRecord(displayName: "n", info: info, protocolVersion: "1")
        #expect { try record.encode() } throws: { error in
            (error as? NearbyError)?.errorDescription?.contains("limit is 400") == true
        }
    }
}

@Suite struct PeerIDTests {
    @Test func base36() {
        #expect(Base36.encode(0, width: 3) == "000")
        #expect(Base36.encode(35) == "z")
        #expect(Base36.encode(36) == "10")
        #expect(Base36.encode(UInt64.max) == "3w5e11264sgsf")
        #expect(Base36.decode("3w5e11264sgsf") == UInt64.max)
        #expect(Base36.decode("3w5e11264sgsg") == nil)  // overflows
        #expect(Base36.decode("ABC") == nil)
    }

    @Test func derivedFromKeyHash() {
        // SHA-256("abc") = ba7816bf8f01cfea…: the first 8 bytes, big-endian, in base 36.
        let id = PeerID(publicKeyDER: Array("abc".utf8))
        #expect(id.rawValue == Base36.encode(0xba78_16bf_8f01_cfea, width: 13))
        #expect(id.rawValue.count == 13)
        #expect(PeerID(id.rawValue) == id)
        #expect(PeerID("short") == nil)
    }
}
