import Testing
@testable import NearbyCore

/// `nearby accept PEER`: peers before invitation IDs, and an invitation ID that names a known peer
/// never matches (issue 23: a stranger whose invitation ID was a friend's peer ID was accepted by
/// `nearby accept <friend's ID>`).
@Suite struct AcceptMatchingTests {
    struct Pending {
        let id: String
        let peerID: String
        let name: String
    }

    private static let friendID = "3f9k2m1q8x7ab"

    private func select(_ all: [Pending], _ query: String, known: [String] = [friendID, "friend"]) -> [String] {
        Invitations.select(
            all, query: query, id: \.id,
            fromPeer: { $0.peerID.hasPrefix(query) || $0.name == query },
            namesAPeer: { query in known.contains { $0.hasPrefix(query) || $0 == query } }
        ).map(\.peerID)
    }

    @Test func anInvitationIDEqualToAFriendsIDIsNotTakenForIt() {
        let stranger = Pending(id: Self.friendID, peerID: "zzzzzzzzzzzzz", name: "stranger")
        #expect(select([stranger], Self.friendID).isEmpty)  // waits for the friend instead
        #expect(select([stranger], "friend").isEmpty)
        #expect(select([stranger], String(Self.friendID.prefix(4))).isEmpty)
        let named = Pending(id: "friend", peerID: "zzzzzzzzzzzzz", name: "stranger")
        #expect(select([named], "friend").isEmpty)
    }

    @Test func thePeerWinsOverAnInvitationIDWhenBothArePending() {
        let stranger = Pending(id: Self.friendID, peerID: "zzzzzzzzzzzzz", name: "stranger")
        let friend = Pending(id: "k2j3h4", peerID: Self.friendID, name: "friend")
        #expect(select([stranger, friend], Self.friendID) == [Self.friendID])
        #expect(select([stranger, friend], "friend") == [Self.friendID])
    }

    @Test func anOrdinaryInvitationIDStillMatches() {
        let stranger = Pending(id: "a1b2c3d4e5", peerID: "zzzzzzzzzzzzz", name: "stranger")
        #expect(select([stranger], "a1b2c3d4e5") == ["zzzzzzzzzzzzz"])
        #expect(select([stranger], "stranger") == ["zzzzzzzzzzzzz"])
        #expect(select([stranger], "zzzz") == ["zzzzzzzzzzzzz"])
        #expect(select([stranger], "nothing").isEmpty)
    }
}
