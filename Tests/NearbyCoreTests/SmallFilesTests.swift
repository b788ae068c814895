import Foundation
import Testing
@testable import NearbyCore

@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyWire
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 43: how many files of a folder go at once, and the group commit that makes them durable.
@Suite struct FilesInFlightTests {
    @Test func smallFilesGoManyAtATimeUpToTheCap() {
        var flight = FilesInFlight(limits: .init(files: 32, bytes: 8 << 20))
        for _ in 0..<32 {
            #expect(flight.admits(4096))
            flight.started(4096)
        }
        #expect(!flight.admits(4096), "a 33rd file waits")
        #expect(flight.files == 32 && flight.bytes == 32 * 4096)
        flight.ended(4096)
        #expect(flight.admits(4096))
    }

    @Test func theirBytesStayWithinOneWindow() {
        var flight = FilesInFlight(limits: .init(files: 32, bytes: 1000))
        flight.started(600)
        #expect(flight.admits(400))
        #expect(!flight.admits(401), "past the window together")
        flight.ended(600)
        #expect(flight.files == 0 && flight.bytes == 0)
    }

    @Test func aBigFileGoesAloneAndNothingJoinsIt() {
        var flight = FilesInFlight(limits: .init(files: 32, bytes: 8 << 20))
        #expect(flight.admits(1 << 30), "nothing in flight: any size")
        flight.started(1 << 30)
        #expect(!flight.admits(1), "nothing joins a big file")
        flight.ended(1 << 30)
        #expect(flight.admits(1))
    }

    @Test func oneAtATimeIsTheOldBehaviour() {
        var flight = FilesInFlight(limits: .init(files: 1, bytes: 8 << 20))
        flight.started(1)
        #expect(!flight.admits(1))
        flight.ended(1)
        #expect(flight.admits(1))
    }

    @Test func endingMoreThanStartedNeverUnderflows() {
        var flight = FilesInFlight(limits: .init(files: 0, bytes: 10))
        #expect(flight.limits.files == 1, "at least one file")
        flight.ended(5)
        #expect(flight.files == 0 && flight.bytes == 0)
    }
}

@Suite struct GroupSyncTests {
    /// A file in a fresh directory with `bytes` written: its descriptor.
    private func written(_ directory: String, _ name: String) throws -> Int32 {
        let fd = open(directory + "/" + name, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        let bytes = [UInt8](repeating: 7, count: 4096)
        _ = bytes.withUnsafeBytes { Transfer.pwriteAll(fd, $0, at: 0) }
        return fd
    }

    @Test func everyWaiterIsSyncedAndFilesThatWaitTogetherShareASync() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("groupsync-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var descriptors: [Int32] = []
        for index in 0..<40 { descriptors.append(try written(directory, "f\(index)")) }
        defer { descriptors.forEach { close($0) } }
        let sync = GroupSync()
        let results = await withTaskGroup(of: Bool.self) { group in
            for fd in descriptors { group.addTask { await sync.sync(fd) } }
            var all: [Bool] = []
            for await synced in group { all.append(synced) }
            return all
        }
        #expect(results.count == 40 && results.allSatisfy { $0 })
    }

    @Test func oneOrManyDescriptorsAreSynced() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("groupsync-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let one = try written(directory, "one"), two = try written(directory, "two")
        defer {
            close(one)
            close(two)
        }
        #expect(GroupSync.sync([one]) == [true])
        #expect(GroupSync.sync([one, two]) == [true, true])
        #expect(GroupSync.sync([one, -1]) == [true, false], "a descriptor that cannot be synced fails alone")
    }
}

/// The file frames' bodies written by hand decode to the same values as JSONEncoder's.
@Suite struct FileFramesJSONTests {
    private func roundTrips<Body: Codable & Equatable>(_ body: Body) throws {
        let frame = FrameBody.frame(.open, body)
        let decoded = try JSONDecoder().decode(Body.self, from: Data(frame.payload.readableBytesView))
        #expect(decoded == body, "\(String(decoding: frame.payload.readableBytesView, as: UTF8.self))")
        #expect(try JSONDecoder().decode(Body.self, from: JSONEncoder().encode(body)) == decoded)
    }

    @Test(arguments: ["plain.txt", "dir/ünï \"q\" \\ /x\t\n\u{01}.bin", ""])
    func fileFramesDecodeToWhatWasWritten(_ text: String) throws {
        try roundTrips(FrameBody.Open(kind: .file, path: text, size: 4096, key: "ab12"))
        try roundTrips(FrameBody.Open(kind: .directory, path: text, size: 0, key: ""))
        try roundTrips(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))
        try roundTrips(FrameBody.OpenReply(accept: false, offset: 12, prefixSHA256: "cd", reason: text, code: .ioError))
        try roundTrips(FrameBody.Start(offset: UInt64.max))
        try roundTrips(FrameBody.Close(sha256: "ef", bytes: 1 << 40))
        try roundTrips(FrameBody.Close(sha256: "ef", bytes: 3, alreadyThere: true, savedAs: text))
        try roundTrips(FrameBody.Close(sha256: "ef", bytes: 3, alreadyThere: false, savedAs: nil))
    }
}

/// What a file costs besides its bytes: its hashes in hex, and the look for a partial to resume.
@Suite struct PerFileCostTests {
    @Test func hexIsTwoLowercaseDigitsAByteAsTheFormatterWrote() {
        let bytes: [UInt8] = [0x00, 0x01, 0x0f, 0x10, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "00010f107f80abff")
        #expect(Hex.encode([UInt8]()) == "")
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.encode(all) == all.map { String(format: "%02x", $0) }.joined())
    }

    @Test func anOfferWithNoPartialFileTakesNoDescriptor() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("resumable-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A link allowed no open file at all: the look for a partial must not need one.
        let budget = ResourceBudget(limits: .init(descriptors: 64, strangerFiles: 0, strangerFilesPerLink: 0))
        let account = budget.account()
        account.markStranger()
        #expect(await FileReceiver.resumable(directory + "/.none.nearby-part", upTo: 10, charging: account) == nil)
        #expect(account.files == 0)
        // One that is there is read (with a descriptor to spare), and its descriptor given back.
        let friend = budget.account()
        let partial = directory + "/.some.nearby-part"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: partial))
        let resume = await FileReceiver.resumable(partial, upTo: 10, charging: friend)
        #expect(resume?.bytes == 5)
        #expect(friend.files == 0)
    }
}

/// Of the files in flight, only so many send at once; the others wait their turn, in order.
@Suite struct StartPermitsTests {
    @Test func theLimitsKeepStartedWithinFiles() {
        #expect(FilesInFlight.Limits().files == 32 && FilesInFlight.Limits().started == 16)
        #expect(FilesInFlight.Limits(files: 1).started == 1, "one file after another, as before")
        #expect(FilesInFlight.Limits(files: 8, started: 0).started == 1)
    }

    @Test func aPlaceGivenBackGoesToTheWaiter() async {
        let permits = StartPermits(2)
        #expect(await permits.take())
        #expect(await permits.take())
        #expect(permits.available == 0)
        let waiter = Task { await permits.take() }
        while permits.waitingCount < 1 { await Task.yield() }
        permits.release()
        #expect(await waiter.value, "the waiter got the place given back")
        #expect(permits.available == 0 && permits.waitingCount == 0)
        permits.release()
        permits.release()
        #expect(permits.available == 2)
    }

    @Test func aCancelledWaiterTakesNothing() async {
        let permits = StartPermits(1)
        #expect(await permits.take())
        let waiter = Task { await permits.take() }
        while permits.waitingCount < 1 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value == false)
        permits.release()
        #expect(permits.available == 1, "the place went back to the free ones, not to the cancelled waiter")
        let late = Task { await permits.take() }
        #expect(await late.value)
    }

    @Test func aTaskCancelledBeforeItAsksTakesNothing() async {
        let permits = StartPermits(1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await permits.take()
        }
        #expect(await task.value == false)
        #expect(permits.available == 1)
    }
}
