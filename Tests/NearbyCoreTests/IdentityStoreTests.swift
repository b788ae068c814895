import Foundation
import Testing
import CMalloc
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity

@Suite struct IdentityStoreTests {
    private func temporaryHome() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-test-\(UUID().uuidString)").path
        return dir + "/nested/home"
    }

    @Test func createdOnceAndReused() throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        #expect(try store.load() == nil)
        let first = try store.loadOrCreate(defaultName: "alpha")
        let second = try store.loadOrCreate(defaultName: "other")
        #expect(first.peerID == second.peerID)
        #expect(second.displayName == "alpha")
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.paths.home)
        #expect(leftovers == ["identity.json"])
    }

    @Test func renameKeepsTheID() throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        let before = try store.loadOrCreate(defaultName: "alpha")
        let after = try store.rename(to: "beta")
        #expect(after.peerID == before.peerID)
        #expect(try store.load()?.displayName == "beta")
        #expect(throws: NearbyError.self) { try store.rename(to: "") }
    }

    @Test func racingFirstRunsAgree() async throws {
        let home = temporaryHome()
        let ids = await withTaskGroup(of: String?.self) { group in
            for index in 0..<16 {
                group.addTask {
                    try? IdentityStore(paths: NearbyPaths(home: home)).loadOrCreate(defaultName: "n\(index)").peerID.rawValue
                }
            }
            var ids: [String?] = []
            for await id in group { ids.append(id) }
            return ids
        }
        #expect(ids.count == 16)
        #expect(Set(ids).count == 1)
        #expect(ids.allSatisfy { $0 != nil })
    }

    @Test(arguments: [
        ("not json", "not a valid identity JSON"),
        (#"{"version":9,"id":"x","name":"n","privateKey":"k","created":"2026-01-01T00:00:00Z"}"#, "unsupported version"),
        (#"{"version":1,"id":"x","name":"n","privateKey":"garbage","created":"2026-01-01T00:00:00Z"}"#, "private key"),
    ])
    func corruptFilesAreNamedNotReplaced(_ content: String, _ reason: String) throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        try FileManager.default.createDirectory(atPath: store.paths.home, withIntermediateDirectories: true)
        try content.write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect {
            try store.loadOrCreate(defaultName: "x")
        } throws: { error in
            guard case let .identityCorrupt(path, message) = error as? NearbyError else { return false }
            return path == store.path && message.contains(reason)
        }
        #expect(try String(contentsOfFile: store.path, encoding: .utf8) == content)  // untouched
    }

    @Test func mismatchedIDIsCorrupt() throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        _ = try store.loadOrCreate(defaultName: "a")
        var text = try String(contentsOfFile: store.path, encoding: .utf8)
        let id = try #require(try store.load()?.peerID.rawValue)
        text = text.replacingOccurrences(of: id, with: "0000000000000")
        try text.write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect(throws: NearbyError.self) { try store.load() }
    }

    /// files-identity's LeakSanitizer report: `Data(contentsOf:)` kept a 4 KiB buffer per read of
    /// an empty file (FoundationEssentials on Linux). 2,000 reads of an empty identity.json would
    /// leave 8 MiB behind; the heap in use (mallinfo2) may not grow by half that, in one of three
    /// tries (the heap is the process's, and other suites run meanwhile).
    @Test func readingAnEmptyIdentityFileLeavesNothingBehind() throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        try FileManager.default.createDirectory(atPath: store.paths.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: store.path, contents: Data()))
        #expect(try IdentityStore.read(store.path) == Data())
        #expect(throws: NearbyError.self) { try store.load() }
        var growth: [Int] = []
        for _ in 0..<3 {
            let before = Int(mallinfo2().uordblks)
            for _ in 0..<2_000 { _ = try IdentityStore.read(store.path) }
            growth.append(Int(mallinfo2().uordblks) - before)
            if growth.last ?? 0 < 4 << 20 { break }
        }
        #expect((growth.min() ?? 0) < 4 << 20, "heap grew by \(growth) bytes")
    }

    /// Read through a descriptor, the file is still refused as Data(contentsOf:) refused it when it
    /// is not a regular file, and it is bounded.
    @Test func aDirectoryOrAHugeFileIsNoIdentity() throws {
        let store = IdentityStore(paths: NearbyPaths(home: temporaryHome()))
        try FileManager.default.createDirectory(atPath: store.path, withIntermediateDirectories: true)
        #expect(throws: NearbyError.self) { try store.load() }
        try FileManager.default.removeItem(atPath: store.path)
        #expect(FileManager.default.createFile(atPath: store.path, contents: Data(count: IdentityStore.maxFileBytes + 1)))
        #expect(throws: NearbyError.identityCorrupt(path: store.path, reason: "over 1024 KiB, not an identity file")) { try store.load() }
        #expect(FileManager.default.createFile(atPath: store.path, contents: Data("{}".utf8)))
        #expect(try IdentityStore.read(store.path) == Data("{}".utf8))
    }

    @Test func pathsFollowTheEnvironment() {
        #expect(NearbyPaths(environment: ["NEARBY_HOME": "/n", "XDG_CONFIG_HOME": "/x", "HOME": "/h"]).home == "/n")
        #expect(NearbyPaths(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]).home == "/x/nearby")
        #expect(NearbyPaths(environment: ["HOME": "/h"]).home == "/h/.config/nearby")
        #expect(NearbyPaths(environment: ["NEARBY_HOME": "", "HOME": "/h"]).home == "/h/.config/nearby")
    }
}
