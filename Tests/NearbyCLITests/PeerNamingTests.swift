import Testing
@testable import NearbyCLI
@testable import NearbyBase

/// The near name a mistyped peer is corrected to, and the corrected command.
@Suite struct PeerNamingTests {
    @Test func theClosestNearNameIsTheCorrection() {
        let near = [PeerRef(id: "aaa", name: "Bob's Pi"), PeerRef(id: "bbb", name: "Carol")]
        #expect(PeerNaming.Watch.closest(near, to: "Bobs Pi")?.id == "aaa")
        #expect(PeerNaming.command(["send", "Bobs Pi", "hi"], query: "Bobs Pi", name: "Bob's Pi") == #"nearby send "Bob's Pi" hi"#)
    }

    /// Two peers named alike: naming either would be as ambiguous as the typo, so no correction
    /// (the lookup's doctor hint stays, and nothing is asked at a terminal).
    @Test func twinsAreNoCorrection() {
        let twins = [PeerRef(id: "aaa", name: "Bob's Pi"), PeerRef(id: "bbb", name: "Bob's Pi")]
        #expect(PeerNaming.Watch.closest(twins, to: "bob's pi") == nil)
        #expect(PeerNaming.Watch.closest([], to: "bob's pi") == nil)
    }
}
