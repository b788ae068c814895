import Foundation
import NIOCore
import NearbyCore
import NearbyHTTP
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyTransfer

/// A receiver in the official app's manner over a real HTTPS socket: every file accepted, one
/// refused at upload (403), one answered 422 (its SHA-256 did not match) `damaged` times.
private actor PickyRoutes: LocalSendRoutes {
    let refuse: String
    let damaged: Int
    var uploads: [String: Int] = [:]
    var prepared: [String: Any] = [:]

    init(refuse: String, damaged: Int) {
        self.refuse = refuse
        self.damaged = damaged
    }

    func handle(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer {
        let bytes = (try? await body.whole(limit: 1 << 20)) ?? nil
        if request.path.hasSuffix("/prepare-upload") {
            let object = bytes.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
            let files = (object?["files"] as? [String: Any]) ?? [:]
            prepared = files
            let tokens = Dictionary(uniqueKeysWithValues: files.keys.map { ($0, "t-" + $0) })
            let answer = try? JSONSerialization.data(withJSONObject: ["sessionId": "s1", "files": tokens])
            return LocalSendAnswer(status: 200, body: Array(answer ?? Data()))
        }
        guard request.path.hasSuffix("/upload"), let id = request.query["fileId"] else { return .status(200) }
        let name = ((prepared[id] as? [String: Any])?["fileName"] as? String) ?? ""
        uploads[name, default: 0] += 1
        if name == refuse { return .status(403, "Rejected") }
        if uploads[name, default: 0] <= damaged, name.hasPrefix("damaged") { return .status(422, "checksum mismatch") }
        return .status(200)
    }

    func count(_ name: String) -> Int { uploads[name] ?? 0 }
}

@Suite struct OneBadFileTests {
    private func files(_ names: [String]) throws -> [OutgoingFile] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsb-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try names.map { name in
            try Data(name.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
            return OutgoingFile(source: directory + "/" + name, relative: name, size: UInt64(name.utf8.count), modified: 0)
        }
    }

    /// Sends `names` to a `PickyRoutes` receiver; the outcome and the routes.
    private func send(_ names: [String], refuse: String, damaged: Int) async throws -> (NearbyError?, PickyRoutes, MemorySink) {
        let identity = try LocalSendIdentity.make()
        let server = try await LocalSendServer.bind(identity: identity, port: 0)
        let routes = PickyRoutes(refuse: refuse, damaged: damaged)
        let sink = MemorySink()
        let sender = LocalSendSender(http: try LocalSendHTTP(identity: try LocalSendIdentity.make()), me: DeviceMessage(alias: "me", fingerprint: "m"), events: sink)
        let outgoing = try files(names)
        let outcome = await withTaskGroup(of: NearbyError??.self) { group in
            group.addTask {
                await server.run(routes)
                return .none
            }
            group.addTask {
                do throws(NearbyError) {
                    try await sender.sendFiles(outgoing, to: LocalSendTarget(host: "127.0.0.1", port: server.port), pin: nil, timeout: .seconds(20))
                    return .some(nil)
                } catch { return .some(error) }
            }
            var outcome: NearbyError?
            for await result in group {
                if case let .some(done) = result {
                    outcome = done
                    group.cancelAll()
                }
            }
            return outcome
        }
        return (outcome, routes, sink)
    }

    @Test func theOthersGoOnAfterOneRefusedFileAnd422IsRetriedThreeTimesAsTheOfficialApp() async throws {
        let names = ["a.jpg", "refused.jpg", "damaged.jpg", "b.jpg", "c.jpg"]
        let (outcome, routes, sink) = try await send(names, refuse: "refused.jpg", damaged: 2)
        let failure = try #require(outcome)
        #expect(failure.exitStatus == .declined)
        #expect(failure.errorDescription?.contains("4 of 5 files arrived; not refused.jpg") == true, "\(failure.errorDescription ?? "")")
        #expect(await routes.count("damaged.jpg") == 3)
        for name in ["a.jpg", "b.jpg", "c.jpg", "refused.jpg"] { #expect(await routes.count(name) == 1, "\(name)") }
        #expect(sink.lines.filter { $0.contains(#""event":"file-sent""#) }.count == 4)
        #expect(sink.lines.filter { $0.contains(#""event":"file-failed""#) }.count == 1)
        #expect(sink.lines.filter { $0.contains(#""event":"file-started""#) && $0.contains("damaged.jpg") }.count == 1)
    }

    @Test func aFileDamagedThreeTimesFailsAloneWithTheIntegrityCode() async throws {
        let (outcome, routes, _) = try await send(["damaged.bin", "ok.bin"], refuse: "", damaged: 5)
        let failure = try #require(outcome)
        #expect(failure.code == "integrity")
        #expect(failure.errorDescription?.contains("1 of 2 files arrived; not damaged.bin") == true, "\(failure.errorDescription ?? "")")
        #expect(await routes.count("damaged.bin") == 3)
        #expect(await routes.count("ok.bin") == 1)
    }
}
