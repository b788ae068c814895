import NearbyBase
import NearbyDNS
import Testing
@testable import NearbyWatch

/// What live watch decodes of a flood (`WatchPace`), and what a flood of one name leaves in memory.
@Suite struct WatchPaceTests {
    /// A flood from one source past its budget: the first second's worth decoded, the rest counted,
    /// and a `sampling` event says 1 in how many; a quiet second after it says every packet again.
    @Test func aFloodIsSampledAndSaysSo() throws {
        var pace = WatchPace()
        var admitted = 0
        for index in 0..<20_000 where pace.admit("10.99.0.3", at: Double(index) / 20_000) { admitted += 1 }
        // A second's worth, and the bucket it started with.
        #expect(admitted <= 2 * Int(WatchPace.perSource) + 1, "\(admitted)")
        let first = pace.second(dropped: 0, droppedTotal: 0, cpu: 0.1)
        let sampling = try #require(first)
        #expect(sampling.every >= 2 && sampling.packets == 20_000 && sampling.decoded == admitted && sampling.skimmed == 20_000 - admitted)
        // Another host is still decoded while the first floods.
        let other = pace.admit("10.99.0.2", at: 1.0)
        #expect(other)
        let next = pace.second(dropped: 0, droppedTotal: 0, cpu: 0.01)
        let calm = try #require(next)
        #expect(calm.every == 1)
        let after = pace.second(dropped: 0, droppedTotal: 0, cpu: 0.01)
        #expect(after == nil)
    }

    /// Many sources share the link's budget; kernel drops or a busy thread narrow it, a calm second widens it.
    @Test func theBudgetNarrowsWhenBehind() throws {
        var pace = WatchPace()
        var admitted = 0
        for index in 0..<20_000 where pace.admit("10.1.\(index % 200).1", at: Double(index) / 20_000) { admitted += 1 }
        #expect(admitted <= 2 * Int(WatchPace.perSecond) + 1, "\(admitted)")
        _ = pace.second(dropped: 500, droppedTotal: 500, cpu: 0.2)
        #expect(pace.scale == 0.5)
        _ = pace.second(dropped: 0, droppedTotal: 500, cpu: 0.9)
        #expect(pace.scale == 0.25)
        let third = pace.second(dropped: 10, droppedTotal: 510, cpu: 0.1)
        let dropping = try #require(third)
        #expect(dropping.dropped == 510 && dropping.every == 1)
        for _ in 0..<10 { _ = pace.second(dropped: 0, droppedTotal: 510, cpu: 0) }
        #expect(pace.scale == 1)
    }

    /// One name flooded with new data each packet, from one source, under a second apart: the claim
    /// keeps at most `maxData` of it (it kept every record: 1.3 KB a packet, without end).
    @Test func aFloodOfNewDataForOneNameIsBounded() {
        var engine = WatchEngine()
        for index in 0..<2_000 {
            let text = Make.response([Make.record("flood.local.", .txt, .txt([Array("flood=\(index)".utf8)] + Array(repeating: [UInt8](repeating: 0x6B, count: 250), count: 4)))])
            _ = engine.process(Make.datagram(text, from: "10.99.0.3"), time: Double(index) / 1_000, interface: "nb0")
        }
        let claims = engine.conflict.claims["flood.local. TXT"] ?? []
        #expect(claims.count == 1 && claims.allSatisfy { $0.data.count <= ConflictRule.maxData && $0.shown.count <= ConflictRule.shownData })
        #expect(claims.allSatisfy { $0.shown.allSatisfy { $0.count <= ConflictRule.shownLength + 1 } })
    }
}
