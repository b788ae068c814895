import Crypto
import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyTransfer

/// Two real nodes in this process sending files over loopback TLS (HOST:PORT: no daemon needed).
@Suite(.serialized, .timeLimit(.minutes(5))) struct FileTransferTests {
    private func temporary(_ name: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    private func node(_ name: String, save: String? = nil) async throws -> (Node, MemorySink) {
        TestNodes.relaxDeadlines()
        let paths = NearbyPaths(home: try temporary("home"))
        let identity = try IdentityStore(paths: paths).loadOrCreate(defaultName: name)
        var configuration = NodeConfiguration(service: .default)
        configuration.autoAccept = true
        if let save { configuration.saveDirectory = save }
        let sink = MemorySink()
        let node = try Node(identity: identity, configuration: configuration, paths: paths, events: sink)
        try await node.start()
        Task { await node.run() }  // ends when the node stops
        return (node, sink)
    }

    private func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    private func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    @Test func filesArriveIntactAndNeverOverwrite() async throws {
        let save = try temporary("save"), source = try temporary("src")
        let (bob, bobEvents) = try await node("bob", save: save)
        let (alice, _) = try await node("alice")
        let content = random(1_500_000)
        try write(content, to: source + "/data.bin")
        try write(Array("old".utf8), to: save + "/data.bin")
        let files = try FileList.collect([source + "/data.bin"])
        let port = await bob.port
        try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: save + "/data.bin")) == Data("old".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: save + "/data (1).bin")) == Data(content))
        #expect(try Data(contentsOf: URL(fileURLWithPath: save + "/data (2).bin")) == Data(content))
        let received = bobEvents.lines.filter { $0.contains(#""event":"file-received""#) }
        #expect(received.count == 2)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: save).filter { $0.hasSuffix(".nearby-part") }
        #expect(leftovers.isEmpty)
        await alice.stop()
        await bob.stop()
    }

    @Test func aPartialFileIsResumedOnlyWhenItsBytesMatch() async throws {
        let save = try temporary("save"), source = try temporary("src")
        let (bob, bobEvents) = try await node("bob", save: save)
        let (alice, aliceEvents) = try await node("alice")
        let content = random(2_000_000)
        try write(content, to: source + "/big.bin")
        let files = try FileList.collect([source + "/big.bin"])
        let key = Transfer.key(sender: alice.identity.peerID, file: files[0])
        let partial = "\(save)/" + Transfer.partialName(of: "big.bin", key: key, from: alice.identity.peerID.rawValue, stranger: true)

        // What an interrupted transfer left: the right first 700 000 bytes.
        try write(Array(content.prefix(700_000)), to: partial)
        let port = await bob.port
        try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: save + "/big.bin")) == Data(content))
        #expect(aliceEvents.lines.contains { $0.contains(#""event":"file-sent""#) && $0.contains(#""skipped":700000"#) })
        #expect(!FileManager.default.fileExists(atPath: partial))

        // A partial file whose bytes are not this file's is started over.
        try write(Array(repeating: 0, count: 500_000), to: partial)
        try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        // The copy is already there: nothing is sent (every byte skipped), no second copy is made,
        // and the partial file of no use any more is gone.
        #expect(!FileManager.default.fileExists(atPath: save + "/big (1).bin"))
        let last = try #require(bobEvents.lines.last { $0.contains(#""event":"file-received""#) })
        #expect(last.contains(#""skipped":2000000"#) && last.contains(#""already_there":true"#))
        let sent = try #require(aliceEvents.lines.last { $0.contains(#""event":"file-sent""#) })
        #expect(sent.contains(#""skipped":2000000"#) && sent.contains(#""already_there":true"#))
        #expect(!FileManager.default.fileExists(atPath: partial))
        await alice.stop()
        await bob.stop()
    }

    @Test func directoriesKeepTheirShape() async throws {
        let save = try temporary("save"), source = try temporary("src")
        try FileManager.default.createDirectory(atPath: source + "/tree/a/b", withIntermediateDirectories: true)
        try write(Array("1".utf8), to: source + "/tree/one.txt")
        try write([], to: source + "/tree/a/empty")
        try write(Array("deep".utf8), to: source + "/tree/a/b/deep.txt")
        try FileManager.default.createDirectory(atPath: source + "/tree/void/inner", withIntermediateDirectories: true)
        let files = try FileList.collect([source + "/tree"])
        #expect(files.map(\.relative) == ["tree/a/b/deep.txt", "tree/a/empty", "tree/one.txt", "tree/void/inner"])
        #expect(files.map { $0.directory == true } == [false, false, false, true])
        let (bob, _) = try await node("bob", save: save)
        let (alice, _) = try await node("alice")
        let port = await bob.port
        try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        #expect(try String(contentsOfFile: save + "/tree/a/b/deep.txt", encoding: .utf8) == "deep")
        #expect(try Data(contentsOf: URL(fileURLWithPath: save + "/tree/a/empty")).isEmpty)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: save + "/tree/void/inner", isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(throws: NearbyError.self) { try FileList.collect([source + "/missing"]) }
        await alice.stop()
        await bob.stop()
    }

    @Test func aNodeWithoutASaveDirectoryTakesNoFiles() async throws {
        let source = try temporary("src")
        let (bob, bobEvents) = try await node("bob")
        let (alice, aliceEvents) = try await node("alice")
        try write(Array("profile".utf8), to: source + "/.bash_profile")
        let files = try FileList.collect([source + "/.bash_profile"])
        let port = await bob.port
        let error = await #expect(throws: NearbyError.self) {
            try await alice.sendFiles(files, to: "127.0.0.1:\(port)", timeout: TestNodes.patience, client: nil)
        }
        #expect(error?.code == "no-save-dir")
        #expect(aliceEvents.lines.contains { $0.contains(#""event":"file-failed""#) && $0.contains(#""code":"no-save-dir""#) })
        #expect(bobEvents.lines.contains { $0.contains(#""code":"no-save-dir""#) && $0.contains("NEARBY_SAVE_DIR") })
        #expect(!bobEvents.lines.contains { $0.contains(#""event":"file-received""#) })
        await alice.stop()
        await bob.stop()
    }
}
