import Testing
@testable import NearbyDNS

/// Produced with dnspython 2.x (`dns.update.UpdateMessage`, `use_tsig(key, fudge=300)`, time fixed
/// at 1700000000), key "nearby-key." = bytes 0…31, HMAC-SHA256.
enum DNSVectors {
    static let keyFile = """
    key "nearby-key" {
    \talgorithm hmac-sha256;
    \tsecret "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    };
    """
    static let unsignedUpdate = "123428000001000000020000076578616d706c650474657374000006000103616263075f6e6561726279045f746370c00c0021000100000078001a00000000109205682d616263076578616d706c65047465737400c022000c0001000000780002c01e"
    static let signedUpdate = "123428000001000000020001076578616d706c650474657374000006000103616263075f6e6561726279045f746370c00c0021000100000078001a00000000109205682d616263076578616d706c65047465737400c022000c0001000000780002c01e0a6e65617262792d6b65790000fa00ff00000000003d0b686d61632d7368613235360000006553f100012c00208e85867794328ff42fd9d77b0243fabd44ffbb3e5356f28a7866b00429d98ab3123400000000"
    static let requestMAC = "1dd9174d87bdfbb0329bd9c38373aa72f9773df694a05086b1510a183db4df7e"
    static let signedResponse = "1234a8000001000000000001076578616d706c65047465737400000600010a6e65617262792d6b65790000fa00ff00000000003d0b686d61632d7368613235360000006553f100012c0020574cbd4ade5ecb35432856fffd109e1bf29b5b573a0afbc88dd7196426d33059123400000000"
}

@Suite struct TSIGTests {
    let key: TSIGKey

    init() throws { key = try TSIGKey.parse(keyFile: DNSVectors.keyFile) }

    @Test func parsesTsigKeygensFileAndNeverShowsTheSecret() throws {
        #expect(key.name == (try DNSName("nearby-key")))
        #expect(!key.description.contains("AAECAwQF"))
        #expect(!"\(key)".contains("AAECAwQF"))
        #expect(!String(reflecting: key).contains("AAECAwQF"))
        #expect(throws: DNSError.self) { try TSIGKey.parse(keyFile: "key \"k\" { algorithm hmac-md5; secret \"AAAA\"; };") }
        #expect(throws: DNSError.self) { try TSIGKey.parse(keyFile: "nonsense") }
        #expect(throws: DNSError.self) { try TSIGKey.parse(keyFile: "key \"k\" { algorithm hmac-sha256; secret \"!!\"; };") }
    }

    @Test func signsExactlyAsDnspythonDoes() throws {
        let signed = try TSIG.sign(hex(DNSVectors.unsignedUpdate), key: key, time: 1_700_000_000)
        #expect(signed.bytes == hex(DNSVectors.signedUpdate))
        #expect(try TSIG.verify(signed.bytes, key: key, now: 1_700_000_010).error == 0)
    }

    @Test func verifiesAResponseOverTheRequestMAC() throws {
        let response = hex(DNSVectors.signedResponse)
        #expect(try TSIG.verify(response, key: key, now: 1_700_000_000, requestMAC: hex(DNSVectors.requestMAC)).error == 0)
        // Without the request MAC, or with another one, it does not verify.
        #expect(throws: DNSError.self) { try TSIG.verify(response, key: key, now: 1_700_000_000) }
        #expect(throws: DNSError.self) {
            try TSIG.verify(response, key: key, now: 1_700_000_000, requestMAC: Array(repeating: 0, count: 32))
        }
    }

    @Test func anyFlippedBitOrLateClockFails() throws {
        let signed = hex(DNSVectors.signedUpdate)
        for index in 2..<signed.count where index != 10 && index != 11 {  // the ID: TSIG's original ID counts
            var bad = signed
            bad[index] ^= 0x01
            #expect(throws: DNSError.self) { try TSIG.verify(bad, key: key, now: 1_700_000_000) }
        }
        #expect(throws: DNSError.self) { try TSIG.verify(signed, key: key, now: 1_700_000_301) }
        let other = TSIGKey(name: key.name, secret: Array(repeating: 7, count: 32))
        #expect(throws: DNSError.self) { try TSIG.verify(signed, key: other, now: 1_700_000_000) }
    }
}
