import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

@Suite struct StrangerDirectoriesTests {
    private let limits = PartialQuota.Limits(files: 10, bytes: 1 << 20, lifetime: 60, directories: 5, directoriesPerPeer: 3)

    private func scratch(_ name: String) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    private func directories(below root: String) -> Int {
        (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).count { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    @Test func offeredDirectoriesCountPerStrangerAndPerNode() {
        var made = StrangerDirectories(limits: limits)
        #expect(made.refusal(adding: 3, owner: "a") == nil)
        #expect(made.refusal(adding: 4, owner: "a")?.contains("3 is the most") == true)
        for path in ["/r/a1", "/r/a2", "/r/a3"] { made.made(path, owner: "a", offered: true, now: 0) }
        // A partial's path is not counted: it goes with the partial.
        made.made("/r/p", owner: "b", offered: false, now: 0)
        #expect(made.refusal(adding: 1, owner: "a") != nil)
        #expect(made.refusal(adding: 2, owner: "b") == nil)
        #expect(made.refusal(adding: 3, owner: "b")?.contains("(5)") == true)
        #expect(made.expired(now: 59).isEmpty && made.expired(now: 60) == ["/r/a3", "/r/a2", "/r/a1"])
    }

    @Test func aPlacedFileMakesTheDirectoriesAboveItTheUsers() {
        var made = StrangerDirectories(limits: limits)
        made.made("/r/x", owner: "a", offered: true, now: 0)
        made.made("/r/x/y", owner: "a", offered: false, now: 0)
        made.made("/r/z", owner: "a", offered: true, now: 0)
        let held = made.holding("/r/x/y/file.txt")
        #expect(held && made.entries.keys.sorted() == ["/r/z"])
        let other = made.holding("/r/other/file.txt")
        #expect(!other)
    }

    @Test func theRecordReadsBackAndNeverLeavesTheRoot() {
        var made = StrangerDirectories(limits: limits)
        made.made("/r/a/b c", owner: "peer1", offered: true, now: 12)
        made.made("/r/p", owner: "", offered: false, now: 34)
        made.made("/elsewhere", owner: "x", offered: true, now: 1)
        let text = made.record()
        #expect(text == "1\tx\t1\t/elsewhere\n12\tpeer1\t1\t/r/a/b c\n34\t\t0\t/r/p\n")
        let read = StrangerDirectories.parse(text + "1\tx\t1\t/r/../up\n1\tx\t1\t/abs\nnonsense\n", below: "/r")
        #expect(read.map(\.0) == ["/r/a/b c", "/r/p"])
        #expect(read[0].1 == .init(owner: "peer1", touched: 12, offered: true))
    }

    @Test func pastTheQuotaNothingIsMadeAndARestartedNodeRemovesWhatWasLeft() throws {
        let root = try scratch("dirs")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let record = root + ".record"
        defer { unlink(record) }
        let partials = PartialFiles(limits: limits, record: record)
        #expect(partials.makeOffered(["a", "b"], below: root, owner: "s1") == nil)
        // Deeper: two more levels, one over s1's three.
        guard let refused = partials.makeOffered(["a", "b", "c", "d"], below: root, owner: "s1") else {
            Issue.record("a stranger made more directories than its share")
            return
        }
        #expect(refused.code == .quota)
        #expect(!FileManager.default.fileExists(atPath: root + "/a/b/c"))
        // Offered again: nothing new to count.
        #expect(partials.makeOffered(["a", "b"], below: root, owner: "s1") == nil)
        #expect(partials.makeOffered(["e"], below: root, owner: "s2") == nil)
        #expect(partials.makeOffered(["f", "g", "h"], below: root, owner: "s3")?.code == .quota)
        #expect(directories(below: root) == 3)
        // A restarted node with a short lifetime finds them in the record, and removes them; the
        // user's own directory stays.
        try FileManager.default.createDirectory(atPath: root + "/mine", withIntermediateDirectories: true)
        var short = limits
        short.lifetime = 0.05
        let again = PartialFiles(limits: short, record: record)
        again.adopt(below: root)
        usleep(100_000)
        again.sweep()
        #expect(directories(below: root) == 1 && FileManager.default.fileExists(atPath: root + "/mine"))
        #expect(!FileManager.default.fileExists(atPath: record))
    }

    @Test func aStrangersEmptyDirectoriesGoWithItsLastDeletedPartial() throws {
        let root = try scratch("last")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let partials = PartialFiles(limits: limits)
        #expect(partials.makeOffered(["tree", "empty"], below: root, owner: "s") == nil)
        #expect(partials.makeOffered(["kept"], below: root, owner: "t") == nil)
        let partial = root + "/tree/.x.s-0123.nearby-part"
        _ = FileManager.default.createFile(atPath: partial, contents: Data("1".utf8))
        partials.begin(partial, owner: "s", bytes: 1) {}
        unlink(partial)
        partials.gone(partial, deleted: true)
        #expect(!FileManager.default.fileExists(atPath: root + "/tree"))
        #expect(FileManager.default.fileExists(atPath: root + "/kept"))
    }
}
