import Foundation
import NearbyCore
import Testing
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity

/// A folder in one prepare-upload, as the official app sends one: thousands of files fit, the
/// shape is kept inside --save-dir, and a list over a bound is refused in words.
@Suite struct ReceiverFolderTests {
    init() { LocalSendTestDeadlines.relax() }

    private func temporary() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsf-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func receiver(_ directory: String, files: Int? = nil) -> LocalSendReceiver {
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        if let files { policy.list.maxFiles = files }
        return LocalSendReceiver(
            me: DeviceMessage(alias: "me", fingerprint: "m"), policy: policy, events: MemorySink(),
            known: LocalSendKnownDevices(paths: NearbyPaths(home: temporary())))
    }

    private func list(_ names: [String], size: Int = 2) -> [UInt8] {
        let files = names.enumerated().map { #""f\#($0.offset)":{"id":"f\#($0.offset)","fileName":"\#($0.element)","size":\#(size),"fileType":"x"}"# }
        return Array(#"{"info":{"alias":"Pixel","fingerprint":"\#(String(repeating: "c", count: 64))"},"files":{\#(files.joined(separator: ","))}}"#.utf8)
    }

    private let prepare = LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload")

    struct Tokens: Decodable {
        var sessionId: String
        var files: [String: String]
    }

    /// Over the strangers' quota of 256 unfinished files: a session writes two at a time.
    @Test func aStrangersFolderOfThreeThousandFilesIsAccepted() async throws {
        let receiver = receiver(temporary())
        let body = list((0..<3000).map { "trip/d\($0 % 10)/f\($0)" })
        let chunks = stride(from: 0, to: body.count, by: 4096).map { Array(body[$0..<min(body.count, $0 + 4096)]) }
        let answer = await receiver.handle(prepare, body: ReceiverTests.body(chunks))
        #expect(answer.status == 200)
        #expect(try JSONDecoder().decode(Tokens.self, from: Data(answer.body)).files.count == 3000)
    }

    @Test func aListOverTheCountIsRefusedInWords() async {
        let receiver = receiver(temporary(), files: 50)
        let answer = await receiver.handle(prepare, body: ReceiverTests.body([list((0..<51).map { "f\($0)" })]))
        #expect(answer.status == 413)
        #expect(!answer.keepAlive)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("at most 50 files in one transfer"))
        #expect(await receiver.sessions.isEmpty)
    }

    @Test func aFolderKeepsItsShapeInsideTheSaveDirectory() async throws {
        let directory = temporary()
        try FileManager.default.createDirectory(atPath: directory + "/trip/a", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: directory + "/trip/a/x.bin", contents: Data("old".utf8)))
        let receiver = receiver(directory)
        let names = ["trip/a/x.bin", "trip/../../../escape.bin", "/etc/abs.bin", #"trip\\win\\w.bin"#, "trip/./b/../c/y.bin"]
        let answer = await receiver.handle(prepare, body: ReceiverTests.body([list(names)]))
        #expect(answer.status == 200)
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        for index in names.indices {
            let upload = LocalSendRequest(
                method: .POST, path: "/api/localsend/v2/upload",
                query: ["sessionId": tokens.sessionId, "fileId": "f\(index)", "token": try #require(tokens.files["f\(index)"])], contentLength: 2)
            #expect(await receiver.handle(upload, body: ReceiverTests.body([Array("\(index)!".utf8)])).status == 200)
        }
        let found = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: directory + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        #expect(Set(found) == ["trip/a/x.bin", "trip/a/x (1).bin", "trip/escape.bin", "etc/abs.bin", "trip/win/w.bin", "trip/b/c/y.bin"])
        #expect(try String(contentsOfFile: directory + "/trip/a/x.bin", encoding: .utf8) == "old")
        #expect(try String(contentsOfFile: directory + "/trip/a/x (1).bin", encoding: .utf8) == "0!")
        // Every file settled: the session is over (counted as states change, not by a walk).
        #expect(await receiver.sessions.isEmpty)
    }
}
