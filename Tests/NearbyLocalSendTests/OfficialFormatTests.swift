import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import NearbyCore
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity

/// Fixtures in the official app's own formats (localsend/localsend 1.18: `packages/core/src/crypto/cert.rs`,
/// `packages/core/src/http/dto_v2.rs`, `packages/core/src/model/discovery.rs`), not only our own.
@Suite struct OfficialFormatTests {
    init() { LocalSendTestDeadlines.relax() }

    /// The certificate of the official app's own fingerprint test, and the value it asserts.
    static let officialCertificate = """
-----BEGIN CERTIFICATE-----
MIIDGTCCAgGgAwIBAgIBATANBgkqhkiG9w0BAQsFADBQMRcwFQYDVQQDEw5Mb2Nh
bFNlbmQgVXNlcjEJMAcGA1UEChMAMQkwBwYDVQQLEwAxCTAHBgNVBAcTADEJMAcG
A1UECBMAMQkwBwYDVQQGEwAwHhcNMjUwMjA5MDAwMzE0WhcNMzUwMjA3MDAwMzE0
WjBQMRcwFQYDVQQDEw5Mb2NhbFNlbmQgVXNlcjEJMAcGA1UEChMAMQkwBwYDVQQL
EwAxCTAHBgNVBAcTADEJMAcGA1UECBMAMQkwBwYDVQQGEwAwggEiMA0GCSqGSIb3
DQEBAQUAA4IBDwAwggEKAoIBAQCL24MxhGfrdJm0Q8ZGiBkZ27ldcEChB4w7rSbJ
yiKeosoNbJl2kyj5dZjfBhWGgDLGDMM5w+Mh/5SrWgTL/QrhbB+lsrxILLznWqBi
R8wJP0P2YW9fBahQskJQcUXt/3jsCsMTWea4rWc3HZGh03bAkJfLM+PDSOfTpvAZ
6DQSp9QLzC9bgVNnq3W0SvOZGpF0xRa4InCyTUgxsNsV4+GIrmN5w4EbRFVVYu7D
5OS5fxNSCukiS0fb6oQzUp0vIAycvvWHHbAy8T6UMoUor2nfvNcryiaOX5WBMLyh
yMZ5gMOyXjdm1bT1XSlvtXPYUzxvsGAzTqS8mXjw8h7mm5htAgMBAAEwDQYJKoZI
hvcNAQELBQADggEBABZ+I7D6wkeSrsi1NBLP2zoZ5oGh+INNcGTravfOQHs4Fbas
/CysaUYjsD3fmaDh4MxgWEqAmWnnBiojfpGX2SGuFqRBKyT9DgitBt0L7Ezg1k3h
bfSiFW4hXWp75grVO8xfML7ZcWMlhKrOsOMUGiy1qs3qsyJ3w7B2Tz78HhXGO5dd
jyPmZarhixKO92UpEvKGxjO0E/3UUNUzxKTAAgFfhKpuwHUgIijM/EppZtA8OcSh
fEztiV0xKfcPVx4d6dqRt/NMElK1Ivw2vUuxTymphZkkFOzht9m73/kyKaeFp8Ij
VRus1zGVD8IVpIdPMyz01WJyS7M0fWaHXKWo+Bo=
-----END CERTIFICATE-----
"""
    static let officialFingerprint = "4BADDE53A7F7CDEEED93189FD898E02BF6B4806CA4C05DE0ACE08319B86552FA"

    @Test func theFingerprintIsSHA256OfTheDERInUppercaseHexAsTheOfficialAppWritesIt() throws {
        let der = try #require(LocalSendIdentity.der(ofPEM: Self.officialCertificate))
        #expect(LocalSendIdentity.fingerprint(ofDER: der) == Self.officialFingerprint)
        #expect(LocalSendIdentity.sameFingerprint(Self.officialFingerprint.lowercased(), Self.officialFingerprint))
        #expect(!LocalSendIdentity.sameFingerprint(Self.officialFingerprint, String(repeating: "0", count: 64)))
    }

    @Test func ourIdentityAnnouncesAnUppercaseFingerprintAndReadsAnOldLowercaseFile() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsof-\(UUID().uuidString)").path + "/home"
        let store = LocalSendIdentityStore(paths: NearbyPaths(home: home))
        let identity = try store.loadOrCreate()
        #expect(identity.fingerprint == identity.fingerprint.uppercased() && identity.fingerprint.count == 64)
        #expect(identity.fingerprint.allSatisfy { $0.isHexDigit })
        // A file an earlier nearby wrote (lowercase) is the same identity.
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        try text.replacingOccurrences(of: identity.fingerprint, with: identity.fingerprint.lowercased()).write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect(try store.load()?.fingerprint == identity.fingerprint)
    }

    @Test func theOfficialRegisterBodyAndAV22AnnouncementDecode() throws {
        // dto_v2.rs test_register_dto_v2_deserialization
        let register = #"{"alias":"Secret Banana","version":"2.0","deviceModel":"Windows","deviceType":"desktop","fingerprint":"random string","port":53317,"protocol":"https","download":true}"#
        let message = try #require(DeviceMessage.decode(Array(register.utf8), limit: 8192))
        #expect(message.alias == "Secret Banana" && message.deviceType == "desktop" && message.download == true)
        // v2.2 multicast (MulticastMessageV2): no `announce` at all, and every one is an announcement.
        let announcement = #"{"alias":"Nice Orange","version":"2.2","deviceModel":"Samsung","deviceType":"mobile","fingerprint":"\#(Self.officialFingerprint)","port":53317,"protocol":"https","download":false}"#
        #expect(try #require(DeviceMessage.decode(Array(announcement.utf8), limit: 8192)).isAnnouncement)
        // v2.0/2.1 answers say `announce: false`; v1 said `announcement`.
        #expect(!(try #require(DeviceMessage.decode(Array(#"{"alias":"a","fingerprint":"f","announce":false}"#.utf8), limit: 8192)).isAnnouncement))
        #expect(!(try #require(DeviceMessage.decode(Array(#"{"alias":"a","fingerprint":"f","announcement":false}"#.utf8), limit: 8192)).isAnnouncement))
        // An unknown deviceType is kept as a word (the official app reads it as desktop).
        #expect(DeviceMessage.decode(Array(#"{"alias":"a","fingerprint":"f","deviceType":"toaster"}"#.utf8), limit: 8192) != nil)
    }

    @Test func ourAnnouncementSaysBothAnnounceAndAnnouncement() throws {
        var me = DeviceMessage(alias: "nearby", fingerprint: Self.officialFingerprint)
        me.announce = true
        me.announcement = true
        let object = try #require(try JSONSerialization.jsonObject(with: Data(me.encoded())) as? [String: Any])
        #expect(object["announce"] as? Bool == true && object["announcement"] as? Bool == true)
        #expect(object["version"] as? String == LocalSendDefaults.protocolVersion)
        #expect(object["protocol"] as? String == "https" && object["port"] as? Int == 53317)
        #expect(object["deviceType"] as? String == "headless" && object["fingerprint"] as? String == Self.officialFingerprint)
    }

    @Test func anOfficialPrepareUploadIsAnsweredWithUUIDsAndItsUploadLands() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsof-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        let receiver = LocalSendReceiver(
            me: DeviceMessage(alias: "me", fingerprint: "m"), policy: policy, events: MemorySink(),
            known: LocalSendKnownDevices(paths: NearbyPaths(home: directory + "/home")))
        let content = Array("hello official".utf8)
        let sha = Hex.encode(SHA256.hash(data: content))
        // As the official sender writes it (PrepareUploadRequestDtoV2 with FileDto, metadata and all).
        let body = #"""
        {"info":{"alias":"Secret Banana","version":"2.2","deviceModel":"Windows","deviceType":"desktop","fingerprint":"\#(Self.officialFingerprint)","port":53317,"protocol":"https","download":false},
         "files":{"0c1c9a1e-5d4e-4a39-9d5b-1f7b6a0e2c11":{"id":"0c1c9a1e-5d4e-4a39-9d5b-1f7b6a0e2c11","fileName":"notes.txt","size":\#(content.count),"fileType":"text/plain","sha256":"\#(sha)","preview":null,"metadata":{"modified":"2024-03-01T10:00:00.000Z","accessed":"2024-03-01T10:00:00.000Z"}}}}
        """#
        let answer = await receiver.handle(
            LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload", clientFingerprint: Self.officialFingerprint.lowercased()),
            body: ReceiverTests.body([Array(body.utf8)]))
        #expect(answer.status == 200)
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        #expect(UUID(uuidString: tokens.sessionId) != nil && tokens.sessionId == tokens.sessionId.lowercased())
        let token = try #require(tokens.files["0c1c9a1e-5d4e-4a39-9d5b-1f7b6a0e2c11"])
        #expect(UUID(uuidString: token) != nil)
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload",
            query: ["sessionId": tokens.sessionId, "fileId": "0c1c9a1e-5d4e-4a39-9d5b-1f7b6a0e2c11", "token": token], contentLength: content.count)
        #expect(await receiver.handle(upload, body: ReceiverTests.body([content])).status == 200)
        #expect(FileManager.default.contents(atPath: directory + "/notes.txt") == Data(content))
    }
}

/// Every LocalSend failure is one sentence a user understands, not a library's name for it.
@Suite struct FailureWordsTests {
    @Test func connectionFailuresAreSentencesNotJargon() {
        #expect(LocalSendHTTP.describe(NIOSSLError.uncleanShutdown) == "the device closed the connection before it answered")
        #expect(LocalSendHTTP.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect")).hasPrefix("nothing is listening there"))
        #expect(LocalSendHTTP.describe(ChannelError.eof) == "the device closed the connection before it answered")
        let target = LocalSendTarget(host: "10.0.0.2", port: 53317)
        let failure = LocalSendSender.nearbyError(.protocolError(LocalSendHTTP.describe(NIOSSLError.uncleanShutdown)), target: target)
        let sentence = failure.errorDescription ?? ""
        #expect(!sentence.contains("TLS") && !sentence.contains("uncleanShutdown") && sentence.contains("closed the connection"))
        #expect(failure.exitStatus == .connectionFailed)
    }

    @Test func aRefusalSaysTheReceiversWordsNotAStatusNumber() {
        let target = LocalSendTarget(host: "10.0.0.2", port: 53317)
        let body = Array(#"{"message":"this node takes at most 1073741824 bytes of unfinished files from senders it does not know; this transfer is 2 bytes"}"#.utf8)
        let refused = LocalSendSender.refusal(LocalSendHTTP.Response(status: 413, body: body, fingerprint: nil), target: target, pin: nil)
        #expect(refused.errorDescription?.contains("bytes of unfinished files") == true)
        #expect(refused.errorDescription?.contains("HTTP") == false)
        let bare = LocalSendSender.refusal(LocalSendHTTP.Response(status: 500, body: [], fingerprint: nil), target: target, pin: nil)
        #expect(bare.errorDescription?.contains("failed to store the file on its side") == true)
    }
}
