import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

@Suite struct PeerQueryTests {
    /// Near names are what a person mistypes: punctuation, spacing, case, a prefix, one or two
    /// letters off — scaled for short names, so "a" is not near everything.
    @Test func nearNamesAreWhatAPersonMistypes() {
        let near = [
            ("Bobs Pi", "Bob's Pi"), ("bobs pi", "Bob's Pi"), ("BobsPi", "Bob's Pi"), ("bob's-pi", "Bob's Pi"),
            ("Bob's  Pi", "Bob's Pi"), ("Bob", "Bob's Pi"), ("bob's pi", "Bob's Pi"), ("Bob's Pj", "Bob's Pi"),
            ("Bbo's Pi", "Bob's Pi"), ("Bob Pi", "Bob's Pi"), ("Bobs Pie", "Bob's Pi"), ("Alcie", "Alice"), ("Alce", "Alice"),
            ("Carols Mac", "Carol's MacBook"), ("Living Room TV", "Living-Room TV"), ("lab printer", "Lab Printr"),
        ]
        for (query, name) in near { #expect(NearName.isNear(query, name), "\(query) near \(name)") }
        let far = [
            ("Bob's Pi", "Bob's Pi"), ("Alice", "Bob"), ("a", "b"), ("a", "ab"), ("Bo", "Al"), ("mac", "max"), ("Bob", "Rob"),
            ("Alice", "Alina"), ("Bob's Pi", "Carol's Pi"), ("'", "Bob"), ("pi", "Bob's Pi"),
        ]
        for (query, name) in far { #expect(!NearName.isNear(query, name), "\(query) not near \(name)") }
        #expect(peer("09okw9tg08ewk", "Bob's Pi").isNear("Bobs Pi"))
        #expect(!peer("09okw9tg08ewk", "Bob's Pi").isNear("Bob's Pi"))
    }

    private func peer(_ id: String, _ name: String?) -> DiscoveredPeer {
        DiscoveredPeer(
            instance: id, txt: TXTRecord(displayName: name, info: [:], protocolVersion: "2"), host: nil, port: 1,
            addresses: [], interface: nil, elapsed: .zero)
    }

    @Test func anEmptyPeerIsRefusedAsAUsageError() {
        #expect(throws: NearbyError.invalidArgument(PeerQuery.emptyRule)) { try PeerQuery("") }
        #expect(NearbyError.invalidArgument(PeerQuery.emptyRule).exitStatus == .usage)
        #expect(throws: NearbyError.self) { try PeerQuery.check(["bob", ""]) }
        #expect(throws: Never.self) { try PeerQuery.check(["bob", nil]) }
        #expect(ControlRequest.send(peers: ["a", ""], all: false, timeout: 1, payload: .init()).namedPeers == ["a", ""])
        #expect(ControlRequest.expecting(.init(), .accept(query: nil, decline: false)).namedPeers == [nil])
    }

    @Test func twoPeersOfOneNameAreAmbiguousForEveryCaller() throws {
        let twins = [peer("aaaa1111", "Bob's Pi"), peer("bbbb2222", "Bob's Pi"), peer("cccc3333", "Carol")]
        let bob = try PeerQuery("Bob's Pi")
        guard case let .ambiguous(both) = bob.choose(twins) else { Issue.record("not ambiguous"); return }
        #expect(Set(both.map(\.instance)) == ["aaaa1111", "bbbb2222"])
        #expect(bob.ambiguity(both) == .peerAmbiguous("Bob's Pi", candidates: ["aaaa1111 (Bob's Pi)", "bbbb2222 (Bob's Pi)"]))
        // A prefix or a full ID names one; a full ID wins even over a name that another peer has.
        guard case let .one(one) = try PeerQuery("bbbb").choose(twins) else { Issue.record("prefix"); return }
        #expect(one.instance == "bbbb2222")
        let named = [peer("aaaa1111", "x"), peer("aaaa11112", "aaaa1111")]
        guard case let .one(exact) = try PeerQuery("aaaa1111").choose(named) else { Issue.record("exact"); return }
        #expect(exact.instance == "aaaa1111")
        guard case .none = try PeerQuery("bob's pi").choose(twins) else { Issue.record("names match exactly"); return }
    }
}
