import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyIdentity
@testable import NearbyDiscovery
#if canImport(Glibc)
import Glibc
#endif

@Suite struct RecentPeersTests {
    private func temporaryPath() -> String {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("nearby-recent-\(UUID().uuidString)/home/recent-peers.json").path
    }

    private func at(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds) }

    private func peer(_ id: String, name: String?) -> DiscoveredPeer {
        DiscoveredPeer(
            instance: id, txt: TXTRecord(displayName: name, info: [:], protocolVersion: "1"), host: nil, port: nil,
            addresses: [], interface: nil, elapsed: .zero)
    }

    @Test func missingOrCorruptFilesReadAsEmpty() throws {
        let path = temporaryPath()
        #expect(RecentPeers(path: path).load().isEmpty)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        for garbage in ["", "{", #"{"version":99,"peers":[]}"#, #"{"version":1,"peers":[{"id":3}]}"#] {
            try Data(garbage.utf8).write(to: URL(fileURLWithPath: path))
            #expect(RecentPeers(path: path).candidates(service: nil).isEmpty)
        }
        // A corrupt file is replaced by the next write, not a reason to fail.
        try RecentPeers(path: path).record([.init(id: "abc", name: "Alice", service: "nearby", lastSeen: at(0))])
        #expect(RecentPeers(path: path).load().map(\.id) == ["abc"])
    }

    @Test func newestFirstOneEntryPerServiceAndIDBounded() throws {
        let store = RecentPeers(path: temporaryPath(), capacity: 3)
        try store.record([
            .init(id: "a", name: "Alice", service: "nearby", lastSeen: at(1)),
            .init(id: "b", name: "Bob", service: "nearby", lastSeen: at(2)),
        ])
        try store.record([
            .init(id: "a", name: "Alice 2", service: "nearby", lastSeen: at(3)),
            .init(id: "a", name: "Alice", service: "chat", lastSeen: at(4)),
            .init(id: "c", name: nil, service: "nearby", lastSeen: at(5)),
        ])
        let entries = store.load()
        #expect(entries.map(\.id) == ["c", "a", "a"])
        #expect(entries.map(\.service) == ["nearby", "chat", "nearby"])
        #expect(entries[2].name == "Alice 2")
        // An older sighting does not replace a newer one.
        try store.record([.init(id: "c", name: "Old", service: "nearby", lastSeen: at(0))])
        #expect(store.load().first { $0.id == "c" }?.name == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: (store.path as NSString).deletingLastPathComponent)
        #expect(leftovers == ["recent-peers.json"])
    }

    @Test func candidatesAreNamesAndIDsOfOneServiceWithoutUnsafeWords() throws {
        let store = RecentPeers(path: temporaryPath())
        try store.record([
            .init(id: "a1", name: "Bob's Pi", service: "nearby", lastSeen: at(3)),
            .init(id: "b2", name: "Bob's Pi", service: "nearby", lastSeen: at(2)),
            .init(id: "c3", name: "line\nbreak", service: "nearby", lastSeen: at(1)),
            .init(id: "d4", name: "-rf", service: "nearby", lastSeen: at(1)),
            .init(id: "e5", name: "Chatty", service: "chat", lastSeen: at(4)),
        ])
        #expect(store.candidates(service: "nearby") == ["Bob's Pi", "a1", "b2", "c3", "d4"])
        #expect(store.candidates(service: "chat") == ["Chatty", "e5"])
        #expect(store.candidates(service: nil).first == "Chatty")
    }

    @Test func browseRecordsEachPeerOnceAndNeverItself() {
        let store = RecentPeers(path: temporaryPath())
        let me = PeerID(publicKeyDER: Data([1, 2, 3]))
        store.recordOnce(peer(me.rawValue, name: "Me"), service: .default, selfID: me, now: at(0))
        store.recordOnce(peer("alice", name: "Alice"), service: .default, selfID: me, now: at(1))
        store.recordOnce(peer("alice", name: "Renamed"), service: .default, selfID: me, now: at(2))
        #expect(store.load().map(\.name) == ["Alice"])
    }

    @Test func recordingIntoAnUnwritablePlaceIsSilent() {
        let store = RecentPeers(path: "/proc/nearby-cannot-write-here/recent-peers.json")
        store.recordOnce(peer("alice", name: "Alice"), service: .default, selfID: nil)
        #expect(store.load().isEmpty)
    }

    @Test func rememberedAddressesByIDPrefixAndUniqueNameWithinTheirLifetime() throws {
        let store = RecentPeers(path: temporaryPath())
        let fresh = at(0)
        try store.record([
            .init(id: "1abc", name: "Alice", service: "nearby", lastSeen: fresh, addresses: ["10.0.0.1", "fe80::1%e0"], port: 4000),
            .init(id: "2def", name: "Bob", service: "nearby", lastSeen: fresh, addresses: ["10.0.0.2"], port: 4001),
            .init(id: "3ghi", name: "Bob", service: "nearby", lastSeen: fresh, addresses: ["10.0.0.3"], port: 4002),
            .init(id: "4jkl", name: "Carol", service: "nearby", lastSeen: fresh),
            .init(id: "5mno", name: "Dave", service: "chat", lastSeen: fresh, addresses: ["10.0.0.5"], port: 4005),
        ])
        let now = at(60)
        #expect(store.remembered("1abc", service: "nearby", excluding: nil, now: now)?.port == 4000)
        #expect(store.remembered("1a", service: "nearby", excluding: nil, now: now)?.id == "1abc")
        #expect(store.remembered("Alice", service: "nearby", excluding: nil, now: now)?.addresses == ["10.0.0.1", "fe80::1%e0"])
        // A name two remembered peers share: discovery decides (and refuses it as ambiguous).
        #expect(store.remembered("Bob", service: "nearby", excluding: nil, now: now) == nil)
        #expect(store.remembered("2def", service: "nearby", excluding: nil, now: now)?.port == 4001)
        // Seen without addresses, on another service, ourselves, empty, or too long ago: nothing.
        #expect(store.remembered("Carol", service: "nearby", excluding: nil, now: now) == nil)
        #expect(store.remembered("Dave", service: "nearby", excluding: nil, now: now) == nil)
        #expect(store.remembered("Alice", service: "nearby", excluding: "1abc", now: now) == nil)
        #expect(store.remembered("", service: "nearby", excluding: nil, now: now) == nil)
        #expect(store.remembered("Alice", service: "nearby", excluding: nil, now: at(RecentPeers.addressLifetime + 1)) == nil)
    }

    @Test func aSightingWithoutAddressesKeepsThemAndForgettingDropsThem() throws {
        let store = RecentPeers(path: temporaryPath())
        try store.record([.init(id: "1abc", name: "Alice", service: "nearby", lastSeen: at(0), addresses: ["10.0.0.1"], port: 4000)])
        try store.record([.init(id: "1abc", name: "Alice", service: "nearby", lastSeen: at(5))])
        #expect(store.remembered("Alice", service: "nearby", excluding: nil, now: at(10))?.port == 4000)
        try store.forgetAddresses(id: "1abc", service: "nearby")
        #expect(store.remembered("Alice", service: "nearby", excluding: nil, now: at(10)) == nil)
        // The entry stays for completion.
        #expect(store.candidates(service: "nearby") == ["Alice", "1abc"])
    }

    @Test func sayingAgainWhatTheFileSaysWithinAMinuteWritesNothing() throws {
        let store = RecentPeers(path: temporaryPath())
        let entry = RecentPeers.Entry(id: "1abc", name: "Alice", service: "nearby", lastSeen: at(0), addresses: ["10.0.0.1"], port: 4000)
        try store.record([entry])
        var first = stat()
        #expect(stat(store.path, &first) == 0)
        var again = entry
        again.lastSeen = at(30)
        try store.record([again])
        var second = stat()
        #expect(stat(store.path, &second) == 0)
        #expect(second.st_ino == first.st_ino, "the file was replaced")
        #expect(store.load().first?.lastSeen == at(0))
        // Another port, or a minute later, is written.
        again.port = 4001
        try store.record([again])
        #expect(store.load().first?.port == 4001)
        again.lastSeen = at(100)
        try store.record([again])
        #expect(store.load().first?.lastSeen == at(100))
    }

    @Test func addressesAreOrderedAndBounded() {
        let many = (1...20).map { "10.0.0.\($0)" }
        #expect(RecentPeers.ordered(["fe80::1%e0", "2001:db8::1", "10.0.0.1", "10.0.0.1"]) == ["10.0.0.1", "2001:db8::1", "fe80::1%e0"])
        #expect(RecentPeers.ordered(many).count == 8)
    }
}
