import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyIdentity
#if canImport(Glibc)
import Glibc
#endif

/// Strangers that `--auto-accept` lets in are pinned in a capped, least-recently-used list beside
/// `known_peers`; friends are never evicted; pinning does not read the file again (issue 23:
/// 20,236 strangers made a 4 MiB `known_peers` that locked everyone out, and each pin re-read it).
@Suite struct KnownPeersCapTests {
    private func fresh(cap: Int = 5) -> (KnownPeers, String) {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-cap-\(UUID().uuidString)").path
        return (KnownPeers(paths: NearbyPaths(home: home), autoCap: cap), home)
    }

    private func id(_ number: Int) -> PeerID {
        PeerID(String(repeating: "0", count: 13 - String(number).count) + String(number)) ?? PeerID(publicKeyDER: [UInt8(number & 0xFF)])
    }

    private func key(_ number: Int) -> Data { Data("key-\(number)".utf8) }

    private func lines(_ file: String) -> Int {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    @Test func strangersStayAtTheCapAndFriendsAreNeverEvicted() throws {
        let (known, _) = fresh(cap: 5)
        #expect(try known.pin(id: id(1), key: key(1), name: "friend") == .new)
        for number in 100..<140 {
            #expect(try known.pin(id: id(number), key: key(number), name: "s\(number)", stranger: true) == .new)
            #expect(known.strangerCount <= 5)
            #expect(lines(known.autoPath) <= 10)
        }
        #expect(known.strangerCount == 5)
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
        #expect(try known.verify(id: id(1), key: key(2)) == .changed)
        for number in 135..<140 { #expect(try known.verify(id: id(number), key: key(number)) == .known) }
        #expect(try known.verify(id: id(100), key: key(100)) == .new)  // forgotten, the least recent
        #expect(lines(known.path) == 1)
        // A stranger's key is still held to while it is pinned; the error names its file.
        #expect(try known.pin(id: id(139), key: key(7), name: "s", stranger: true) == .changed)
        #expect(known.file(pinning: id(139)) == known.autoPath)
        #expect(known.file(pinning: id(1)) == known.path)
    }

    @Test func theLeastRecentlySeenStrangerGoesFirst() throws {
        let (known, _) = fresh(cap: 3)
        for number in 1...3 { _ = try known.pin(id: id(number), key: key(number), name: "s", stranger: true) }
        #expect(try known.pin(id: id(1), key: key(1), name: "s", stranger: true) == .known)  // seen again
        _ = try known.pin(id: id(4), key: key(4), name: "s", stranger: true)
        #expect(try known.verify(id: id(2), key: key(2)) == .new)
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
        // Read again by a new node: the same three, in the same order.
        let again = KnownPeers(paths: NearbyPaths(home: (known.path as NSString).deletingLastPathComponent), autoCap: 3)
        #expect(again.strangerCount == 3)
        _ = try again.pin(id: id(5), key: key(5), name: "s", stranger: true)
        #expect(try again.verify(id: id(3), key: key(3)) == .new)
        #expect(try again.verify(id: id(1), key: key(1)) == .known)
    }

    @Test func anExplicitPinTakesAStrangerIntoKnownPeersForGood() throws {
        let (known, _) = fresh(cap: 2)
        _ = try known.pin(id: id(1), key: key(1), name: "s", stranger: true)
        #expect(try known.pin(id: id(1), key: key(1), name: "now a friend") == .known)
        #expect(lines(known.path) == 1)
        for number in 10..<20 { _ = try known.pin(id: id(number), key: key(number), name: "s", stranger: true) }
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
        #expect(known.names("now a friend"))
        #expect(known.names(String(id(1).rawValue.prefix(12))))
        #expect(!known.names("nobody"))
    }

    /// Incremental: after its own append the node knows the file as it is, so the next check does
    /// not read it again; an edit by someone else is still noticed.
    @Test func pinningFollowsTheFileWithoutReadingItAgain() throws {
        let (known, _) = fresh()
        for number in 1...2000 { _ = try known.pin(id: id(number), key: key(number), name: "f") }
        var info = stat()
        #expect(stat(known.path, &info) == 0)
        #expect(known.state.withLock { $0.stamp } == FileStamp(info))
        #expect(known.state.withLock { $0.pins.count } == 2000)
        // Someone removes every pin but one: noticed.
        let first = try String(contentsOfFile: known.path, encoding: .utf8).split(separator: "\n")[0]
        try (first + "\n").write(toFile: known.path, atomically: false, encoding: .utf8)
        #expect(try known.verify(id: id(2), key: key(2)) == .new)
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
    }

    /// A `known_peers` over the read bound locks nobody out: its first part is read.
    @Test func aHugeKnownPeersIsReadUpToItsBound() throws {
        let (known, home) = fresh()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        var text = "\(id(1).rawValue) \(key(1).base64EncodedString()) friend\n"
        let filler = "\(id(2).rawValue) \(key(2).base64EncodedString()) \(String(repeating: "x", count: 200))\n"
        text += String(repeating: filler, count: KnownPeers.maxBytes / filler.utf8.count + 10)
        try text.write(toFile: known.path, atomically: false, encoding: .utf8)
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
        #expect(try known.pin(id: id(3), key: key(3), name: "new friend") == .new)
        #expect(try known.verify(id: id(3), key: key(3)) == .known)
    }

    /// The strangers' file is only a record: junk in it is skipped, never a lock-out.
    @Test func junkInTheStrangersFileIsSkipped() throws {
        let (known, home) = fresh()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let good = "\(id(1).rawValue) \(key(1).base64EncodedString()) s\n"
        try ("garbage line\n" + good + "\u{FF}\n").write(toFile: known.autoPath, atomically: false, encoding: .utf8)
        #expect(try known.verify(id: id(1), key: key(1)) == .known)
        #expect(try known.pin(id: id(2), key: key(2), name: "s", stranger: true) == .new)
        #expect(!((try? String(contentsOfFile: known.autoPath, encoding: .utf8)) ?? "").contains("garbage"))
    }
}
