import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// Issue 42: a stranger's upload over another protocol (a browser, LocalSend) lands through the
/// core's one receive-to-disk path: a partial file counted in the strangers' quota, placed whole
/// under a free name, removed however it ends otherwise.
@Suite struct StrangerUploadTests {
    private func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-upload-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func aWholeUploadIsPlacedBesideAnExistingFileNeverOverIt() async throws {
        let root = try directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: root + "/photo.jpg"))
        let partials = PartialFiles()
        let upload = try await StrangerUpload.begin(
            "photo.jpg", in: root, below: root, key: "k1", from: "web", owner: "10.0.0.9", partials: partials)
        #expect(partials.counted.files == 1, "counted in the strangers' quota while written")
        #expect(names(root).contains { $0.hasSuffix("-u.nearby-part") }, "a stranger's unresumable partial")
        try await upload.write(ByteBuffer(string: "hello "))
        try await upload.write(ByteBuffer(string: "world"))
        let placed = try await upload.finish()
        #expect(placed.path == root + "/photo (1).jpg")
        #expect(try String(contentsOfFile: placed.path, encoding: .utf8) == "hello world")
        #expect(try String(contentsOfFile: root + "/photo.jpg", encoding: .utf8) == "mine")
        #expect(placed.sha256 == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
        #expect(names(root) == ["photo (1).jpg", "photo.jpg"], "no partial left")
        #expect(partials.counted.files == 0 && partials.counted.bytes == 0)
    }

    @Test func anAbandonedOrRefusedUploadLeavesNothing() async throws {
        let root = try directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let partials = PartialFiles()
        let dropped = try await StrangerUpload.begin("a.bin", in: root, below: root, key: "k1", from: "web", owner: "10.0.0.9", partials: partials)
        try await dropped.write(ByteBuffer(string: "half"))
        await dropped.abandon()
        #expect(names(root).isEmpty)
        let refused = try await StrangerUpload.begin("b.bin", in: root, below: root, key: "k2", from: "web", owner: "10.0.0.9", partials: partials)
        try await refused.write(ByteBuffer(string: "data"))
        await #expect(throws: NearbyError.self) {
            _ = try await refused.finish { _ in .transferFailed(path: "b.bin", code: .integrity, reason: "not the announced SHA-256") }
        }
        #expect(names(root).isEmpty, "refused by its check: nothing under any name")
        #expect(partials.counted.files == 0)
    }

    @Test func theQuotaTakesAPartialBackWhileItIsWritten() async throws {
        let root = try directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let partials = PartialFiles(limits: .init(files: 1))
        let first = try await StrangerUpload.begin("first.bin", in: root, below: root, key: "k1", from: "web", owner: "10.0.0.9", partials: partials)
        try await first.write(ByteBuffer(string: "begun"))
        // Another stranger's partial, from any protocol: the quota holds one, the older goes.
        let second = try await StrangerUpload.begin("second.bin", in: root, below: root, key: "k2", from: "localsend", owner: "10.0.0.7", partials: partials)
        do {
            try await first.write(ByteBuffer(string: "more"))
            Issue.record("the taken-back upload went on")
        } catch {
            #expect(error.code == "quota")
        }
        await first.abandon()
        try await second.write(ByteBuffer(string: "kept"))
        _ = try await second.finish()
        #expect(names(root) == ["second.bin"])
    }
}
