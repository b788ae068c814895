import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

@Suite struct ResourceBudgetTests {
    @Test func keepsAQuarterOfTheDescriptorsAndAtLeast64() {
        #expect(ResourceBudget.limit(descriptors: 1024) == 768)
        #expect(ResourceBudget.limit(descriptors: 100) == 36)
        #expect(ResourceBudget.limit(descriptors: 1 << 20) == ResourceBudget.ceiling)
        let limits = ResourceBudget.Limits.forProcess(descriptors: 1024, environment: [:])
        #expect(limits.descriptors == 768 && limits.strangerFiles == 192 && limits.strangerFilesPerLink == 16)
        let set = ResourceBudget.Limits.forProcess(
            descriptors: 1024, environment: ["NEARBY_STRANGER_FILES": "10", "NEARBY_STRANGER_FILES_PER_PEER": "3"])
        #expect(set.strangerFiles == 10 && set.strangerFilesPerLink == 3)
    }

    @Test func everyNumberOfTheBudgetIsReadInOnePlace() {
        let standard = ResourceBudget.Limits.forProcess(descriptors: 1024, environment: [:])
        #expect(standard.frameBytes == 4 << 20 && standard.bulkReadBytes == 16 << 20 && standard.controlClientBytes == 1 << 20)
        #expect(standard.output == OutputQueue.Limits(bytes: 2 << 20, dropAt: 8 << 20) && standard.disk == PartialQuota.Limits())
        let set = ResourceBudget.Limits.forProcess(descriptors: 1024, environment: [
            "NEARBY_FRAME_BUDGET_BYTES": "1000", "NEARBY_BULK_READ_BUDGET_BYTES": "2000", "NEARBY_OUTPUT_QUEUE_BYTES": "4096",
            "NEARBY_CONTROL_CLIENT_QUEUE_BYTES": "3000", "NEARBY_PARTIAL_FILES": "5", "NEARBY_PARTIAL_DIRECTORIES": "6",
            "NEARBY_PARTIAL_DIRECTORIES_PER_PEER": "2",
        ])
        #expect(set.frameBytes == 1000 && set.bulkReadBytes == 2000 && set.controlClientBytes == 3000)
        #expect(set.output == OutputQueue.Limits(bytes: 4096, dropAt: 4 * 4096))
        #expect(set.disk.files == 5 && set.disk.directories == 6 && set.disk.directoriesPerPeer == 2)
        let budget = ResourceBudget(limits: set)
        #expect(budget.frames.limit == 1000 && budget.bulkReads.limit == 2000)
    }

    @Test func connectionsTakeUpToTheLimit() {
        let budget = ResourceBudget(limits: .init(descriptors: 2))
        #expect(budget.takeConnection() && budget.takeConnection())
        #expect(!budget.takeConnection())
        budget.giveConnection()
        #expect(budget.takeConnection())
        #expect(budget.descriptorsInUse == 2)
    }

    @Test func filesAndConnectionsShareTheDescriptors() throws {
        let budget = ResourceBudget(limits: .init(descriptors: 3))
        let friend = budget.account()
        let first = try friend.takeFile().get()
        #expect(budget.takeConnection() && budget.takeConnection())
        #expect(friend.takeFile().refusal == .descriptors(limit: 3))
        #expect(friend.files == 1 && budget.descriptorsInUse == 3)
        first.release()
        first.release()  // once only
        #expect(friend.files == 0 && budget.descriptorsInUse == 2)
        #expect(budget.takeConnection())
    }

    @Test func strangersHaveAShareAndEachLinkAShareOfThat() throws {
        let budget = ResourceBudget(limits: .init(descriptors: 100, strangerFiles: 5, strangerFilesPerLink: 3))
        let one = budget.account(), two = budget.account(), friend = budget.account()
        one.markStranger()
        two.markStranger()
        let ones = try (0..<3).map { _ in try one.takeFile().get() }
        #expect(one.takeFile().refusal == .strangerFilesPerLink(limit: 3))
        let twos = try (0..<2).map { _ in try two.takeFile().get() }
        #expect(two.takeFile().refusal == .strangerFiles(limit: 5))
        // The peers you chose are not held back by strangers.
        let friends = try (0..<20).map { _ in try friend.takeFile().get() }
        #expect(budget.strangerFilesInUse == 5 && budget.descriptorsInUse == 25)
        ones[0].release()
        #expect(two.takeFile().isSuccess)
        #expect(budget.strangerFilesInUse == 5)
        for charge in ones + twos + friends { charge.release() }
        #expect(budget.descriptorsInUse == 1 && one.files == 0)
        #expect("\(ResourceBudget.Refusal.strangerFilesPerLink(limit: 3))".contains("3 files open"))
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
    var refusal: Failure? { if case let .failure(why) = self { why } else { nil } }
}

@Suite struct PartialQuotaTests {
    private let limits = PartialQuota.Limits(files: 3, bytes: 1000, lifetime: 60)

    @Test func overTheFileCountTheOldestPartialOfTheHeaviestStrangerGoes() {
        var quota = PartialQuota(limits: limits)
        #expect(quota.begin("a1", owner: "a", bytes: 100, now: 0).isEmpty)
        #expect(quota.begin("a2", owner: "a", bytes: 100, now: 1).isEmpty)
        #expect(quota.begin("b1", owner: "b", bytes: 150, now: 2).isEmpty)
        for path in ["a1", "a2", "b1"] { quota.idle(path, now: 3) }
        // a holds 200 bytes, b 150: a's oldest goes, never the newcomer.
        #expect(quota.begin("c1", owner: "c", bytes: 0, now: 4) == ["a1"])
        #expect(quota.count == 3 && quota.bytes == 250)
    }

    @Test func overTheBytesIdlePartialsGoBeforeOnesBeingWritten() {
        var quota = PartialQuota(limits: limits)
        _ = quota.begin("a1", owner: "a", bytes: 300, now: 0)
        _ = quota.begin("b1", owner: "b", bytes: 100, now: 0)
        quota.idle("b1", now: 1)
        // a is heavier, but its partial is being written: b's idle one goes first.
        #expect(quota.grew("a1", by: 650, now: 2) == ["b1"])
        // Alone and still growing: a transfer is bounded by the size it announced.
        #expect(quota.grew("a1", by: 500, now: 3).isEmpty)
        // Nothing idle left: the other transfer being written goes for the newcomer.
        #expect(quota.begin("c1", owner: "c", bytes: 10, now: 4) == ["a1"])
        #expect(quota.grew("c1", by: 1, now: 5).isEmpty)
        #expect(quota.bytes == 11)
    }

    @Test func idlePartialsExpireAndAResumeKeepsThem() {
        var quota = PartialQuota(limits: limits)
        _ = quota.begin("a1", owner: "a", bytes: 10, now: 0)
        _ = quota.begin("b1", owner: "b", bytes: 10, now: 0)
        quota.idle("a1", now: 10)
        quota.idle("b1", now: 10)
        #expect(quota.expired(now: 69).isEmpty)
        // b resumes within the lifetime: kept while written, and counted from its new stop.
        _ = quota.begin("b1", owner: "b", bytes: 10, now: 69)
        #expect(quota.expired(now: 70) == ["a1"])
        #expect(quota.expired(now: 200).isEmpty)
        quota.idle("b1", now: 200)
        #expect(quota.expired(now: 260) == ["b1"])
        #expect(quota.count == 0 && quota.bytes == 0)
    }

    @Test func removedPartialsAreForgotten() {
        var quota = PartialQuota(limits: limits)
        _ = quota.begin("a1", owner: "a", bytes: 10, now: 0)
        quota.remove("a1")
        quota.remove("a1")
        #expect(quota.count == 0 && quota.bytes == 0)
        let set = PartialQuota.Limits.from(environment: ["NEARBY_PARTIAL_FILES": "4", "NEARBY_PARTIAL_BYTES": "5", "NEARBY_PARTIAL_LIFETIME": "1.5"])
        #expect(set == PartialQuota.Limits(files: 4, bytes: 5, lifetime: 1.5))
        #expect(PartialQuota.Limits.from(environment: [:]) == PartialQuota.Limits(files: 256, bytes: 1 << 30, lifetime: 86400))
    }
}

@Suite struct PartialNameTests {
    @Test func aLongNameKeepsItsPartialUnderTheNameLimit() {
        let long = String(repeating: "é", count: 120)  // 240 bytes: a legal name
        let name = Transfer.partialName(of: long, key: String(repeating: "a", count: 32), from: "abc", alone: "-7-4294967295")
        #expect(name.utf8.count <= 255)
        #expect(name.hasPrefix("." + String(repeating: "é", count: 32) + "."))
        #expect(name.hasSuffix("-7-4294967295.nearby-part"))
        #expect(Transfer.partialName(of: "a.txt", key: "k", from: "p") == Transfer.partialName(of: "a.txt", key: "k", from: "p"))
        #expect(Transfer.partialName(of: "a.txt", key: "k", from: "p") != Transfer.partialName(of: "a.txt", key: "k", from: "q"))
    }

    @Test func aStrangersPartialIsKnownByItsName() {
        let theirs = Transfer.partialName(of: "a.b.txt", key: "k", from: "p", alone: "-3-99", stranger: true)
        #expect(FileReceiver.isStrangersPartial(theirs))
        #expect(!FileReceiver.isStrangersPartial(Transfer.partialName(of: "a.b.txt", key: "k", from: "p")))
        #expect(!FileReceiver.isStrangersPartial(".s-x.nearby-part") && !FileReceiver.isStrangersPartial("report.pdf"))
    }

    @Test func strangersPartialsOfAnEarlierRunAreCountedAndExpire() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-adopt-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let theirs = root + "/sub/" + Transfer.partialName(of: "x.bin", key: "k", from: "p", stranger: true)
        let friends = root + "/" + Transfer.partialName(of: "y.bin", key: "k", from: "q")
        for path in [theirs, friends] { _ = FileManager.default.createFile(atPath: path, contents: Data("12345".utf8)) }
        let partials = PartialFiles(limits: .init(files: 10, bytes: 1 << 20, lifetime: 3600))
        #expect(partials.adopt(below: root) == 1)
        #expect(partials.counted.files == 1 && partials.counted.bytes == 5)
        #expect(partials.sweep() == 0)
        // An hour old already: the next sweep of a node whose lifetime is shorter deletes it.
        let old = PartialFiles(limits: .init(files: 10, bytes: 1 << 20, lifetime: 0.5))
        #expect(old.adopt(below: root) == 1)
        usleep(1_100_000)
        #expect(old.sweep() == 1)
        #expect(!FileManager.default.fileExists(atPath: theirs) && FileManager.default.fileExists(atPath: friends))
    }

    @Test func aPartialClaimedForAResumeIsNotDeletedUnderIt() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-claim-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let partials = PartialFiles(limits: .init(files: 1, bytes: 1 << 20, lifetime: 3600))
        let (a, b) = (root + "/a", root + "/b")
        for path in [a, b] { _ = FileManager.default.createFile(atPath: path, contents: Data("1".utf8)) }
        partials.begin(a, owner: "s", bytes: 1) {}
        partials.idle(a)
        #expect(partials.claim(a))  // an offer to resume it
        partials.begin(b, owner: "t", bytes: 1) {}
        #expect(FileManager.default.fileExists(atPath: a))
        partials.release(a)
        partials.idle(b)
        partials.begin(a, owner: "s", bytes: 1) {}
        // Not claimed now: the quota takes the other one.
        #expect(!FileManager.default.fileExists(atPath: b) && partials.counted.files == 1)
    }

    @Test func directoriesAStrangerMadeGoWithItsLastPartial() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-prune-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/mine", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let partials = PartialFiles(limits: .init(files: 10, bytes: 1 << 20, lifetime: 0.05))
        try partials.makeDirectories(root + "/mine/x/y", below: root)
        for name in ["p1", "p2"] {
            _ = FileManager.default.createFile(atPath: root + "/mine/x/y/" + name, contents: Data("1".utf8))
            partials.begin(root + "/mine/x/y/" + name, owner: "s", bytes: 1) {}
        }
        partials.idle(root + "/mine/x/y/p1")
        unlink(root + "/mine/x/y/p2")
        partials.gone(root + "/mine/x/y/p2", deleted: true)
        #expect(FileManager.default.fileExists(atPath: root + "/mine/x/y/p1"))
        usleep(100_000)
        #expect(partials.sweep() == 1)
        // x and y were the stranger's; mine was there before.
        #expect(!FileManager.default.fileExists(atPath: root + "/mine/x"))
        #expect(FileManager.default.fileExists(atPath: root + "/mine"))
        #expect(partials.counted.files == 0)
    }
}
