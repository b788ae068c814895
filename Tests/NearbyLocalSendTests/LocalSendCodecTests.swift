import Foundation
import NearbyCore
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity

@Suite struct LocalSendCodecTests {
    private func home() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ls-\(UUID().uuidString)").path + "/home"
    }

    @Test func identityIsMadeOnceAndItsFingerprintIsTheCertificatesHash() throws {
        let store = LocalSendIdentityStore(paths: NearbyPaths(home: home()))
        let first = try store.loadOrCreate()
        let second = try store.loadOrCreate()
        #expect(first.fingerprint == second.fingerprint)
        #expect(first.fingerprint == LocalSendIdentity.fingerprint(ofDER: first.certificateDER))
        #expect(first.fingerprint.count == 64)
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test func anEditedFingerprintIsRefused() throws {
        let store = LocalSendIdentityStore(paths: NearbyPaths(home: home()))
        let identity = try store.loadOrCreate()
        var text = try String(contentsOfFile: store.path, encoding: .utf8)
        text = text.replacingOccurrences(of: identity.fingerprint, with: String(repeating: "0", count: 64))
        try text.write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect(throws: NearbyError.self) { try store.load() }
    }

    @Test func anAnnouncementDecodes() throws {
        let json = #"{"alias":"Pixel 8","version":"2.1","deviceModel":"Google","deviceType":"mobile","fingerprint":"AB12","port":53318,"protocol":"https","download":false,"announce":true}"#
        let message = try #require(DeviceMessage.decode(Array(json.utf8), limit: 8192))
        #expect(message.alias == "Pixel 8")
        #expect(message.announce == true)
        let device = LocalSendDevice(message, host: "10.0.0.2", interface: "eth0")
        #expect(device.port == 53318)
        #expect(device.https)
        #expect(device.info["device_type"] == "mobile")
        #expect(device.matches("Pixel 8"))
        #expect(device.matches(String(device.id.prefix(4))))
    }

    @Test func hostileAnnouncementsAreBoundedOrDropped() {
        // Too deep, too large, no fingerprint, a fingerprint with control bytes, not JSON.
        let deep = String(repeating: "[", count: 50) + String(repeating: "]", count: 50)
        #expect(DeviceMessage.decode(Array(#"{"alias":"a","fingerprint":"f","x":\#(deep)}"#.utf8), limit: 8192) == nil)
        #expect(DeviceMessage.decode([UInt8](repeating: 32, count: 9000), limit: 8192) == nil)
        #expect(DeviceMessage.decode(Array(#"{"alias":"a"}"#.utf8), limit: 8192) == nil)
        #expect(DeviceMessage.decode(Array(#"{"alias":"a","fingerprint":"a\u001bb"}"#.utf8), limit: 8192) == nil)
        #expect(DeviceMessage.decode(Array("nonsense".utf8), limit: 8192) == nil)
        // A huge alias with escape bytes is kept short and shows no raw escape.
        let alias = "\u{1b}]0;owned\u{07}" + String(repeating: "x", count: 5000)
        let message = DeviceMessage(alias: alias, fingerprint: "f")
        let device = LocalSendDevice(message, host: "10.0.0.3", interface: nil)
        #expect(device.alias.count <= 100)  // 64 characters, an escape written as several
        #expect(!device.alias.unicodeScalars.contains { $0.value < 0x20 })
        #expect(device.port == LocalSendDefaults.port)
    }

    @Test func jsonDepthIsCountedOutsideStrings() {
        #expect(JSONShape.depth(of: Array(#"{"a":"[[[[[[[[[["}"#.utf8), limit: 2) == 1)
        #expect(JSONShape.depth(of: Array(#"{"a":{"b":[1]}}"#.utf8), limit: 8) == 3)
        #expect(JSONShape.depth(of: Array(#"{"a":{"b":[1]}}"#.utf8), limit: 2) == nil)
        #expect(JSONShape.depth(of: Array(#"{"a":"unterminated}"#.utf8), limit: 8) == nil)
    }

    @Test func peerIDComesFromTheFingerprint() {
        let hex = String(repeating: "ab", count: 32)
        let id = LocalSendDevice.peerID(fingerprint: hex)
        #expect(id.count == PeerID.length)
        #expect(id == LocalSendDevice.peerID(fingerprint: hex.uppercased()))
        #expect(LocalSendDevice.peerID(fingerprint: "random-string").count == PeerID.length)
    }

    @Test func addressesAreToldFromNames() {
        #expect(LocalSendTarget.address("10.0.0.2")?.port == 53317)
        #expect(LocalSendTarget.address("10.0.0.2:8080")?.port == 8080)
        #expect(LocalSendTarget.address("[fe80::1]:53317")?.host == "fe80::1")
        #expect(LocalSendTarget.address("Pixel 8") == nil)
        #expect(LocalSendTarget.address("host:99999") == nil)
    }
}

@Suite struct DeviceTableTests {
    private func device(_ fingerprint: String, alias: String = "a", host: String = "10.0.0.2") -> LocalSendDevice {
        LocalSendDevice(DeviceMessage(alias: alias, fingerprint: fingerprint), host: host, interface: nil)
    }

    @Test func foundUpdatedLost() {
        var table = DeviceTable(ownFingerprint: "me", lifetime: .seconds(10))
        let start = ContinuousClock.now
        let ourselves = table.heard(device("me"), at: start)
        #expect(ourselves == nil)
        let first = table.heard(device("x"), at: start)
        #expect(first == .found(device("x")))
        let again = table.heard(device("x"), at: start + .seconds(1))
        #expect(again == nil)
        let renamed = table.heard(device("x", alias: "b"), at: start + .seconds(2))
        #expect(renamed == .updated(device("x", alias: "b"), changed: ["name"]))
        let early = table.expire(at: start + .seconds(5))
        #expect(early.isEmpty)
        let late = table.expire(at: start + .seconds(13))
        #expect(late.map(\.fingerprint) == ["x"])
        #expect(table.count == 0)
    }

    @Test func tenThousandFakeDevicesFillAtMostTheCapacity() {
        var table = DeviceTable(ownFingerprint: "me", capacity: 256)
        let now = ContinuousClock.now
        var found = 0, full = 0
        for index in 0..<10_000 {
            switch table.heard(device("fake\(index)", host: "10.\(index / 65536).\(index / 256 % 256).\(index % 256)"), at: now) {
            case .found: found += 1
            case .full: full += 1
            default: break
            }
        }
        #expect(found == 256)
        #expect(full == 1)
        #expect(table.count == 256)
    }

    @Test func repliesAreRateLimited() {
        var gate = ReplyLimiter(interval: .seconds(2), perSecond: 5)
        let now = ContinuousClock.now
        let first = gate.allows("a", at: now)
        #expect(first)
        let soon = gate.allows("a", at: now + .milliseconds(10))
        #expect(!soon)
        var allowed = 1
        for index in 0..<100 where gate.allows("d\(index)", at: now + .milliseconds(20)) { allowed += 1 }
        #expect(allowed == 5)
        let later = gate.allows("a", at: now + .seconds(3))
        #expect(later)
    }
}

@Suite struct SenderOutcomeTests {
    private let target = LocalSendTarget(host: "10.0.0.2", port: 53317)

    private func response(_ status: Int, _ body: String = "") -> LocalSendHTTP.Response {
        LocalSendHTTP.Response(status: status, body: Array(body.utf8), fingerprint: nil)
    }

    @Test func refusalsBecomeNearbysOutcomes() {
        let noPIN = LocalSendSender.refusal(response(401), target: target, pin: nil)
        #expect(noPIN.exitStatus == .declined && (noPIN.errorDescription ?? "").contains("--pin"))
        let wrong = LocalSendSender.refusal(response(401), target: target, pin: "1")
        #expect(wrong.exitStatus == .declined && (wrong.errorDescription ?? "").contains("wrong"))
        let said = LocalSendSender.refusal(response(403, #"{"message":"no \u001b[2J thanks"}"#), target: target, pin: nil)
        #expect(said.exitStatus == .declined && (said.errorDescription ?? "").contains("no \\u{1b}[2J thanks"))
        #expect(LocalSendSender.refusal(response(409), target: target, pin: nil).exitStatus == .connectionFailed)
        #expect(LocalSendSender.refusal(response(429), target: target, pin: nil).exitStatus == .connectionFailed)
        let busy = LocalSendSender.refusal(response(503, #"{"message":"no room"}"#), target: target, pin: nil)
        #expect(busy.exitStatus == .connectionFailed && (busy.errorDescription ?? "").contains("no room for another upload just now (503): no room"))
        let lockedOut = LocalSendSender.refusal(response(429), target: target, pin: "1357")
        #expect(lockedOut.exitStatus == .connectionFailed && (lockedOut.errorDescription ?? "").contains("wrong PINs"))
        let mismatch = LocalSendSender.nearbyError(.fingerprintMismatch(expected: "a", got: "b"), target: target)
        #expect(mismatch.exitStatus == .identityCheckFailed)
        let late = LocalSendSender.nearbyError(.timedOut("no answer"), target: target, waited: .seconds(30))
        #expect(late.exitStatus == .timedOut)
    }

    @Test func theOfferCarriesEachFilesHash() throws {
        let body = LocalSendSender.prepareBody(
            info: DeviceMessage(alias: "me", fingerprint: "f"),
            files: [.init(id: "f1", fileName: "a b.jpg", size: 3, fileType: "image/jpeg", sha256: "ab")])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let files = try #require(object["files"] as? [String: [String: Any]])
        #expect(files["f1"]?["sha256"] as? String == "ab")
        #expect(files["f1"]?["fileName"] as? String == "a b.jpg")
        #expect(LocalSendSender.uploadPath(session: "s 1", file: "f1", token: "t&x").hasSuffix("sessionId=s%201&fileId=f1&token=t%26x"))
        #expect(LocalSendSender.mediaType("notes.txt") == "text/plain")
    }
}
