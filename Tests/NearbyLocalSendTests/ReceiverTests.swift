import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NearbyCore
import NearbyHTTP
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity

@Suite struct ReceiverTests {
    init() { LocalSendTestDeadlines.relax() }

    private func temporary() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsr-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func receiver(_ policy: LocalSendPolicy, home: String) -> (LocalSendReceiver, MemorySink) {
        let sink = MemorySink()
        let me = DeviceMessage(alias: "me", fingerprint: "m")
        return (LocalSendReceiver(me: me, policy: policy, events: sink, known: LocalSendKnownDevices(paths: NearbyPaths(home: home))), sink)
    }

    /// A body delivered in the given chunks, then its end.
    static func body(_ chunks: [[UInt8]]) -> HTTPBody {
        let parts = Locked(chunks.map { HTTPServerRequestPart.body(ByteBuffer(bytes: $0)) } + [.end(nil)])
        return HTTPBody(next: { parts.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
    }

    private func body(_ chunks: [[UInt8]]) -> HTTPBody { Self.body(chunks) }

    private func prepareBody(alias: String = "Pixel 8", fingerprint: String = String(repeating: "a", count: 64), files: [(String, String, Int, String?)]) -> [UInt8] {
        var offered: [String: Any] = [:]
        for (id, name, size, sha) in files {
            var file: [String: Any] = ["id": id, "fileName": name, "size": size, "fileType": "image/jpeg"]
            if let sha { file["sha256"] = sha }
            offered[id] = file
        }
        let info: [String: Any] = ["alias": alias, "fingerprint": fingerprint, "version": "2.1"]
        return Array(try! JSONSerialization.data(withJSONObject: ["info": info, "files": offered]))
    }

    private let prepare = LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload")

    @Test func noSaveDirectoryNoFiles() async {
        let (receiver, sink) = receiver(LocalSendPolicy(saveDirectory: nil, pin: nil), home: temporary())
        let answer = await receiver.handle(prepare, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])]))
        #expect(answer.status == 403)
        #expect(sink.lines.contains { $0.contains(#""event":"declined""#) && $0.contains("--save-dir") })
    }

    @Test func pinIsAskedFor() async {
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: "1234")
        policy.autoAccept = true
        let (receiver, _) = receiver(policy, home: temporary())
        let none = await receiver.handle(prepare, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])]))
        #expect(none.status == 401)
        var wrong = prepare
        wrong.query = ["pin": "9"]
        #expect(await receiver.handle(wrong, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 401)
    }

    @Test func aFileLandsWholeUnderAFreeName() async throws {
        let directory = temporary()
        #expect(FileManager.default.createFile(atPath: directory + "/a.jpg", contents: Data("old".utf8)))
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        let (receiver, sink) = receiver(policy, home: temporary())
        let sha = Hex.encode(SHA256.hash(data: Array("abcdef".utf8)))
        let answer = await receiver.handle(prepare, body: body([prepareBody(files: [("f1", "../../a.jpg", 6, sha)])]))
        #expect(answer.status == 200)
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        let token = try #require(tokens.files["f1"])
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload", query: ["sessionId": tokens.sessionId, "fileId": "f1", "token": token],
            contentLength: 6)
        var wrongHost = upload
        wrongHost.host = "10.0.0.66"
        #expect(await receiver.handle(wrongHost, body: body([])).status == 403)
        let done = await receiver.handle(upload, body: body([Array("abc".utf8), Array("def".utf8)]))
        #expect(done.status == 200)
        #expect(try String(contentsOfFile: directory + "/a (1).jpg", encoding: .utf8) == "abcdef")
        #expect(try String(contentsOfFile: directory + "/a.jpg", encoding: .utf8) == "old")
        #expect(sink.lines.contains { $0.contains(#""event":"file-received""#) })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["a (1).jpg", "a.jpg"])
    }

    @Test func aWrongHashLeavesNothing() async throws {
        let directory = temporary()
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        let (receiver, _) = receiver(policy, home: temporary())
        let answer = await receiver.handle(prepare, body: body([prepareBody(files: [("f1", "b.bin", 3, String(repeating: "0", count: 64))])]))
        struct Tokens: Decodable { var sessionId: String; var files: [String: String] }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload",
            query: ["sessionId": tokens.sessionId, "fileId": "f1", "token": tokens.files["f1"] ?? ""])
        // 422, as the official app: the sender may try again with the same token, 3 times in all.
        #expect(await receiver.handle(upload, body: body([Array("xyz".utf8)])).status == 422)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(await receiver.handle(upload, body: body([Array("xyz".utf8)])).status == 422)
        #expect(await receiver.handle(upload, body: body([Array("xyz".utf8)])).status == 422)
        #expect(await receiver.handle(upload, body: body([Array("xyz".utf8)])).status == 403)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func threeWrongPINsAreRefusedAWhile() async {
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: "1234")
        policy.autoAccept = true
        let (receiver, _) = receiver(policy, home: temporary())
        var wrong = prepare
        wrong.query = ["pin": "9"]
        for _ in 0..<3 { #expect(await receiver.handle(wrong, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 401) }
        var right = prepare
        right.query = ["pin": "1234"]
        #expect(await receiver.handle(right, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 429)
        right.host = "10.0.0.10"
        #expect(await receiver.handle(right, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 200)
    }

    @Test func routesAnswerAsTheOfficialAppDoes() async {
        let (receiver, _) = receiver(LocalSendPolicy(saveDirectory: temporary(), pin: nil), home: temporary())
        #expect(await receiver.handle(LocalSendRequest(method: .GET, path: "/api/localsend/v1/info"), body: body([])).status == 200)
        let cancel = LocalSendRequest(method: .POST, path: "/api/localsend/v2/cancel", query: ["sessionId": "nope"])
        #expect(await receiver.handle(cancel, body: body([])).status == 200)
    }

    /// An offer of no files is 400 on every path that takes a transfer, as the app's (v2.rs: "No
    /// files provided"), before a session or a person: none is made, none is asked. The list's
    /// reader refuses it (PrepareUploadList.finish), before any policy is looked at.
    @Test func anEmptyOfferIs400OnEveryPath() async {
        var policies: [(String, LocalSendPolicy)] = []
        for path in ["--auto-accept", "--accept-from", "nearby accept", "a person"] {
            var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
            switch path {
            case "--auto-accept": policy.autoAccept = true
            case "--accept-from": policy.acceptFrom = ["Pixel 8"]
            case "nearby accept": policy.acceptFirst = true
            default: break
            }
            policies.append((path, policy))
        }
        for (path, policy) in policies {
            let (receiver, sink) = receiver(policy, home: temporary())
            // A person's path would wait for them: bounded, so that a wait fails rather than hangs.
            let status = await withTaskGroup(of: Int?.self) { group in
                group.addTask { await receiver.handle(self.prepare, body: self.body([self.prepareBody(files: [])])).status }
                group.addTask {
                    try? await Task.sleep(for: .seconds(20))
                    await receiver.withdraw(from: self.prepare.host)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            #expect(status == 400, "\(path)")
            #expect(!sink.lines.contains { $0.contains(#""event":"invitation""#) }, "\(path)")
        }
    }

    @Test func aCertificateThatIsNotTheAnnouncedFingerprintIsRefused() async {
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.autoAccept = true
        let (receiver, sink) = receiver(policy, home: temporary())
        var shown = prepare
        shown.clientFingerprint = String(repeating: "c", count: 64)
        #expect(await receiver.handle(shown, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 403)
        #expect(sink.lines.contains { $0.contains("certificate") && $0.contains(#""event":"declined""#) })
        shown.clientFingerprint = String(repeating: "a", count: 64)
        #expect(await receiver.handle(shown, body: body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])).status == 200)
    }

    /// As the official app trusts by fingerprint: under --auto-accept another device of a known
    /// alias is taken (as a stranger), with a warning; refused only when the alias was trusted.
    @Test func aChangedFingerprintForAKnownAliasIsAWarningUnderAutoAccept() async {
        let home = temporary()
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.autoAccept = true
        let (receiver, sink) = receiver(policy, home: home)
        let first = await receiver.handle(prepare, body: body([prepareBody(fingerprint: String(repeating: "a", count: 64), files: [("f1", "x", 0, nil)])]))
        #expect(first.status == 200)
        let (later, laterSink) = self.receiver(policy, home: home)
        let second = await later.handle(prepare, body: body([prepareBody(fingerprint: String(repeating: "b", count: 64), files: [("f1", "x", 0, nil)])]))
        #expect(second.status == 200)
        #expect(laterSink.lines.contains { $0.contains(#""event":"fingerprint-changed""#) && $0.contains("FINGERPRINT CHANGED") })
        _ = sink
    }

    @Test func aPersonAnswersThroughAccept() async throws {
        let (receiver, sink) = receiver(LocalSendPolicy(saveDirectory: temporary(), pin: nil), home: temporary())
        let offer = body([prepareBody(files: [("f1", "a.jpg", 3, nil)])])
        async let decided = receiver.handle(prepare, body: offer)
        // The invitation waits for an answer (polled, at most 120 s: a loaded machine is slow).
        let deadline = ContinuousClock.now + .seconds(120)
        while !sink.lines.contains(where: { $0.contains(#""event":"invitation""#) }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!sink.lines.contains { $0.contains("answered_by") })
        guard case let .line(line) = await receiver.answer(query: "Pixel 8", accept: true, token: 1) else {
            Issue.record("no answer line")
            return
        }
        #expect(line.contains(#""event":"accepted""#) && line.contains("nearby accept"))
        #expect(await decided.status == 200)
    }

    @Test func anAcceptThatLeftAnswersNothing() async {
        let (receiver, _) = receiver(LocalSendPolicy(saveDirectory: temporary(), pin: nil), home: temporary())
        receiver.forget(7)
        guard case let .failure(error) = await receiver.answer(query: nil, accept: true, token: 7) else {
            Issue.record("a forgotten client still answered")
            return
        }
        #expect(error.code == "cancelled")
    }
}
