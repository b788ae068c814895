import Foundation
import NearbyCore
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyTransfer

/// No monopoly: senders on different addresses served at once, each on its own account; a floor
/// rate; the strangers' quota at prepare-upload; a pinned sender never refused for a stranger.
@Suite struct ReceiverSharingTests {
    init() { LocalSendTestDeadlines.relax() }

    private func temporary() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lss-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func receiver(acceptFrom: [String] = [], quota: PartialQuota.Limits = PartialQuota.Limits()) -> LocalSendReceiver {
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.autoAccept = true
        policy.acceptFrom = acceptFrom
        return LocalSendReceiver(
            me: DeviceMessage(alias: "me", fingerprint: "m"), policy: policy, events: MemorySink(),
            known: LocalSendKnownDevices(paths: NearbyPaths(home: temporary())), partials: PartialFiles(limits: quota))
    }

    private func offer(alias: String, fingerprint: String, size: UInt64 = 3) -> [UInt8] {
        let info = #"{"alias":"\#(alias)","version":"2.1","fingerprint":"\#(fingerprint)","port":53317,"protocol":"https"}"#
        return Array(#"{"info":\#(info),"files":{"f1":{"id":"f1","fileName":"a.bin","size":\#(size),"fileType":"application/octet-stream"}}}"#.utf8)
    }

    private func prepare(_ receiver: LocalSendReceiver, host: String, alias: String, fingerprint: String? = nil, shown: String? = nil, size: UInt64 = 3) async -> LocalSendAnswer {
        let fingerprint = fingerprint ?? String(repeating: String(host.last ?? "0"), count: 64)
        let request = LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload", host: host, clientFingerprint: shown)
        return await receiver.handle(request, body: ReceiverTests.body([offer(alias: alias, fingerprint: fingerprint, size: size)]))
    }

    @Test func sendersOnTwoAddressesAreServedAtOnceAndAnUnusedSessionIsGivenUpWhenItsSenderAsksAgain() async {
        let receiver = receiver()
        #expect(await prepare(receiver, host: "10.0.0.66", alias: "stranger").status == 200)
        // Today's main answered 409 "Blocked by another session" here: one session for the whole node.
        #expect(await prepare(receiver, host: "10.0.0.7", alias: "friend").status == 200)
        // Issue 58: a sender that lost the answer asks again; its unused session no longer holds
        // its address for 30 s (409 "busy").
        #expect(await prepare(receiver, host: "10.0.0.66", alias: "stranger").status == 200)
        #expect(await receiver.sessions.count == 2)
    }

    @Test func aDeclaredSizeOverTheStrangersQuotaIsRefusedAtPrepareUploadInWords() async {
        let receiver = receiver()
        let answer = await prepare(receiver, host: "10.0.0.66", alias: "stranger", size: 1 << 40)
        #expect(answer.status == 413)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("bytes of unfinished files from senders it does not know"))
        #expect(await receiver.sessions.isEmpty)
    }

    @Test func aSessionSlowerThanTheFloorRateIsEnded() async throws {
        let receiver = receiver()
        let answer = await prepare(receiver, host: "10.0.0.66", alias: "stranger")
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        #expect(LocalSendSessions.deadline(for: 3, from: .now) > .now + .seconds(1))
        await receiver.expireSlow(now: .now + .seconds(86400))
        #expect(await receiver.sessions.isEmpty)
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload", query: ["sessionId": tokens.sessionId, "fileId": "f1", "token": tokens.files["f1"] ?? ""],
            host: "10.0.0.66")
        #expect(await receiver.handle(upload, body: ReceiverTests.body([Array("abc".utf8)])).status == 403)
    }

    @Test func aPinnedSenderTakesTheOldestStrangersPlace() async {
        let pinnedFingerprint = String(repeating: "AB", count: 32)
        let pinnedID = LocalSendDevice.peerID(fingerprint: pinnedFingerprint)
        let receiver = receiver(acceptFrom: [pinnedID])
        let limit = LocalSendSessions.limits.sessions
        for index in 0..<limit { #expect(await prepare(receiver, host: "10.0.1.\(index)", alias: "s\(index)").status == 200) }
        #expect(await prepare(receiver, host: "10.0.2.1", alias: "late stranger").status == 429)
        // The pinned sender (by the certificate it shows) is served all the same.
        let pinned = await prepare(receiver, host: "10.0.0.9", alias: "friend", fingerprint: pinnedFingerprint, shown: pinnedFingerprint.lowercased())
        #expect(pinned.status == 200)
        #expect(await receiver.sessions.count == limit)
        #expect(await receiver.sessions.values.contains { $0.pinned })
    }

    @Test func aFailedUploadLeavesNothingCountedAgainstTheQuota() async throws {
        let partials = PartialFiles()
        let directory = temporary()
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        let receiver = LocalSendReceiver(
            me: DeviceMessage(alias: "me", fingerprint: "m"), policy: policy, events: MemorySink(),
            known: LocalSendKnownDevices(paths: NearbyPaths(home: temporary())), partials: partials)
        let answer = await prepare(receiver, host: "10.0.0.66", alias: "stranger", size: 6)
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload", query: ["sessionId": tokens.sessionId, "fileId": "f1", "token": tokens.files["f1"] ?? ""],
            host: "10.0.0.66")
        // Three bytes of six, then the end: incomplete, the partial goes.
        #expect(await receiver.handle(upload, body: ReceiverTests.body([Array("abc".utf8)])).status == 400)
        #expect(partials.counted.files == 0 && partials.counted.bytes == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}

/// Issue 43 item 4: a folder keeps its shape, each part sanitized, never outside --save-dir.
@Suite struct LocalSendFolderTests {
    init() { LocalSendTestDeadlines.relax() }

    @Test func aFoldersFilesLandInItsShapeInsideTheSaveDirectory() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var policy = LocalSendPolicy(saveDirectory: root, pin: nil)
        policy.autoAccept = true
        let receiver = LocalSendReceiver(
            me: DeviceMessage(alias: "me", fingerprint: "m"), policy: policy, events: MemorySink(),
            known: LocalSendKnownDevices(paths: NearbyPaths(home: root + "/.home")))
        let names = ["a": "photos/2024/a.jpg", "b": "../../etc/passwd", "c": "/abs/\\u001b[2Jc.txt"]
        let files = names.map { #""\#($0.key)":{"id":"\#($0.key)","fileName":"\#($0.value)","size":1,"fileType":"image/jpeg"}"# }.joined(separator: ",")
        let body = #"{"info":{"alias":"cam","fingerprint":"\#(String(repeating: "C", count: 64))"},"files":{\#(files)}}"#
        let answer = await receiver.handle(
            LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload"), body: ReceiverTests.body([Array(body.utf8)]))
        #expect(answer.status == 200)
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        for key in names.keys {
            let upload = LocalSendRequest(
                method: .POST, path: "/api/localsend/v2/upload", query: ["sessionId": tokens.sessionId, "fileId": key, "token": tokens.files[key] ?? ""])
            #expect(await receiver.handle(upload, body: ReceiverTests.body([Array("x".utf8)])).status == 200)
        }
        #expect(FileManager.default.fileExists(atPath: root + "/photos/2024/a.jpg"))
        #expect(FileManager.default.fileExists(atPath: root + "/etc/passwd"))
        #expect(FileManager.default.fileExists(atPath: root + "/abs/[2Jc.txt"))
    }
}

@Suite struct DeviceFloodTests {
    private func device(_ fingerprint: String, alias: String, host: String) -> LocalSendDevice {
        LocalSendDevice(DeviceMessage(alias: alias, fingerprint: fingerprint), host: host, interface: nil)
    }

    @Test func aFloodFromOneAddressFillsOnlyItsShare() {
        var table = DeviceTable(ownFingerprint: "me", capacity: 256, perAddress: 8)
        let now = ContinuousClock.now
        for index in 0..<300 { _ = table.heard(device("fake\(index)", alias: "d\(index)", host: "10.0.0.66"), at: now) }
        #expect(table.count == 8)
        let real = table.heard(device("real", alias: "DropBox", host: "10.0.0.2"), at: now)
        #expect(real == .found(device("real", alias: "DropBox", host: "10.0.0.2")))
    }

    @Test func aDeviceThatAnsweredIsKeptOverDecoysFromManyAddresses() {
        var table = DeviceTable(ownFingerprint: "me", capacity: 256, perAddress: 8)
        let now = ContinuousClock.now
        for index in 0..<300 { _ = table.heard(device("fake\(index)", alias: "d\(index)", host: "10.1.\(index / 256).\(index % 256)"), at: now) }
        #expect(table.count == 256)
        // Its announcement alone finds the table full; its register answer (confirmed) gets in.
        let real = device("real", alias: "DropBox", host: "10.0.0.2")
        let announced = table.heard(real, at: now)
        #expect(announced == nil)
        let answered = table.heard(real, confirmed: true, at: now)
        #expect(answered == .found(real))
        #expect(table.devices.contains { $0.alias == "DropBox" } && table.count == 256)
        // Decoys claiming its fingerprint from elsewhere do not move it.
        let claimed = table.heard(device("real", alias: "DropBox", host: "10.0.0.66"), at: now)
        #expect(claimed == nil)
        #expect(table.devices.first { $0.alias == "DropBox" }?.host == "10.0.0.2")
    }

    @Test func registeringBackIsOncePerAddressASecondAndBacksOffAfterAFailure() {
        var gate = ReplyLimiter(interval: .seconds(1), perSecond: 8, backoff: .seconds(30))
        let now = ContinuousClock.now
        // 3,000 forged announcements naming one host: one register to it in that second.
        var toVictim = 0
        for index in 0..<3000 where gate.allows("10.0.0.5", at: now + .milliseconds(index / 10)) { toVictim += 1 }
        #expect(toVictim == 1)
        gate.failed("10.0.0.5", at: now + .milliseconds(500))
        let backingOff = gate.allows("10.0.0.5", at: now + .seconds(5))
        #expect(!backingOff)
        let later = gate.allows("10.0.0.5", at: now + .seconds(31))
        #expect(later)
    }
}
