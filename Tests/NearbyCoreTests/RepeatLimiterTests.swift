import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase

@Suite struct RepeatLimiterTests {
    let start = ContinuousClock.now

    private func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    @Test func aFloodPrintsTheBurstThenOneSummaryPerWindow() {
        var limiter = RepeatLimiter<String>(burst: 5, window: .seconds(10))
        var shown = 0
        var summaries: [RepeatLimiter<String>.Summary] = []
        // 20,000 in the first 9 s.
        for index in 0..<20_000 {
            let (show, summary) = limiter.admit("rejected", now: at(Double(index) * 9 / 20_000))
            if show { shown += 1 }
            if let summary { summaries.append(summary) }
        }
        #expect(shown == 5)
        #expect(summaries.isEmpty)
        #expect(limiter.due(now: at(9.5)).summaries.isEmpty)
        // The window ends: one summary, once.
        let due = limiter.due(now: at(10))
        #expect(due.summaries == [.init(key: "rejected", count: 19_995, seconds: 10)])
        #expect(due.next == nil)
        #expect(limiter.due(now: at(11)).summaries.isEmpty)
        // A new window: five more, then held back again.
        let again = (0..<7).map { limiter.admit("rejected", now: at(12 + Double($0) / 10)).show }
        #expect(again == [true, true, true, true, true, false, false])
    }

    @Test func theSummaryAlsoComesWithTheNextLineOfItsKind() {
        var limiter = RepeatLimiter<String>(burst: 2, window: .seconds(10))
        for index in 0..<5 { _ = limiter.admit("k", now: at(Double(index))) }
        let (show, summary) = limiter.admit("k", now: at(10.5))
        #expect(show)
        #expect(summary == .init(key: "k", count: 3, seconds: 10))
        #expect(limiter.due(now: at(30)).summaries.isEmpty)
    }

    @Test func kindsAreCountedApartAndQuietOnesPrintEverything() {
        var limiter = RepeatLimiter<String>(burst: 1, window: .seconds(10))
        #expect(limiter.admit("a", now: at(0)).show)
        #expect(limiter.admit("b", now: at(0)).show)
        #expect(!limiter.admit("a", now: at(1)).show)
        #expect(limiter.due(now: at(2)).next == at(10))
        // One a window is never held back and never summarised.
        for window in 0..<10 { #expect(limiter.admit("c", now: at(Double(window) * 10)).show) }
        let due = limiter.due(now: at(200))
        #expect(due.summaries == [.init(key: "a", count: 1, seconds: 10)])
    }

    @Test func theKindsCountedAreBounded() {
        var limiter = RepeatLimiter<Int>(burst: 1, window: .seconds(10))
        for kind in 0..<1_000 { #expect(limiter.admit(kind, now: at(0)).show) }
        // Kinds beyond the bound are printed, not counted; the first ones still are.
        #expect(limiter.admit(1_000, now: at(1)).show && limiter.admit(1_000, now: at(1)).show)
        #expect(!limiter.admit(0, now: at(1)).show)
        // Windows that ended make room.
        #expect(limiter.admit(2_000, now: at(11)).show)
        #expect(!limiter.admit(2_000, now: at(11)).show)
    }

    @Test func countsAreWrittenWithGroupedDigits() {
        #expect(RepeatLimiter<String>.grouped(19_873) == "19,873")
        #expect(RepeatLimiter<String>.grouped(999) == "999")
        #expect(RepeatLimiter<String>.grouped(1_000_000) == "1,000,000")
        #expect(NearbyLog.summaryText(.init(key: "x", count: 19_873, seconds: 10), example: "dropped a datagram (replayed)")
            == #"… and 19,873 more like "dropped a datagram (replayed)" in the last 10 s"#)
    }
}

@Suite struct LimitedSinkTests {
    private let peer = PeerRef(id: "3hx5hctom3pdm", name: "vm")

    @Test func strangersRepeatsAreSummarisedAndNothingElseIsTouched() throws {
        let memory = MemorySink()
        let sink = LimitedSink(memory, burst: 5, window: .seconds(600))
        for index in 0..<2_000 {
            sink.emit(Events.Rejected(address: "10.0.0.9:\(index)", reason: "not a nearby peer: GET", code: "not-a-nearby-peer"))
            sink.emit(Events.Failure(code: "protocol-violation", message: "broke the protocol", exitStatus: 5))
            if index % 100 == 0 {
                sink.emit(Events.Message(peer: peer, text: "hi", data: nil, bytes: 2))
                sink.emit(Events.Failure(code: "daemon-unavailable", message: "the daemon went away", exitStatus: 7))
            }
        }
        sink.emit(Events.Rejected(address: "10.0.0.9:1", reason: "bad key", code: "identity-mismatch"))
        let kinds = memory.lines.compactMap { LineKind.kind($0) }
        #expect(kinds.filter { $0 == "rejected/not-a-nearby-peer" }.count == 5)
        #expect(kinds.filter { $0 == "rejected/identity-mismatch" }.count == 1)
        #expect(kinds.filter { $0 == "error/protocol-violation" }.count == 5)
        #expect(kinds.filter { $0 == "error/daemon-unavailable" }.count == 20)
        #expect(kinds.filter { $0 == "message/" }.count == 20)
        sink.drain()
        let summaries = try memory.lines.filter { $0.hasPrefix(#"{"event":"suppressed""#) }.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(summaries.count == 2)
        for summary in summaries {
            #expect(summary["count"] as? Int == 1_995)
            #expect(summary["seconds"] as? Int == 600)
        }
        #expect(Set(summaries.compactMap { $0["of"] as? String }) == ["rejected", "error"])
    }

    @Test func theSummaryComesWhenTheWindowEndsEvenIfTheFloodStopped() async throws {
        let memory = MemorySink()
        let sink = LimitedSink(memory, burst: 1, window: .milliseconds(200))
        for _ in 0..<10 { sink.emit(Events.Rejected(address: "a", reason: "r", code: "not-a-nearby-peer")) }
        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while !memory.lines.contains(where: { $0.contains(#""event":"suppressed""#) }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let summary = try #require(memory.lines.last)
        #expect(summary.contains(#""count":9"#), "\(summary)")
        #expect(memory.lines.count == 2)
    }

    @Test func refusedFileChannelsAreFoldedPerPeerAndEveryOtherFailurePrints() throws {
        let memory = MemorySink()
        let sink = LimitedSink(memory, refusalBurst: 3, refusalWindow: .seconds(600))
        let other = PeerRef(id: "otherpeer", name: nil)
        func failed(_ who: PeerRef, _ code: String, direction: String = "receive") -> Events.FileFailed {
            Events.FileFailed(transfer: "t", direction: direction, peer: who, path: "r/c.bin", code: code, reason: "no room", resumable: false)
        }
        for _ in 0..<832 { sink.emit(failed(peer, "busy")) }
        for _ in 0..<10 { sink.emit(failed(other, "busy")) }
        for _ in 0..<4 { sink.emit(failed(peer, "quota")) }
        // A transfer's own end, and a sender's, always print.
        for _ in 0..<10 { sink.emit(failed(peer, "integrity")) }
        for _ in 0..<10 { sink.emit(failed(peer, "busy", direction: "send")) }
        let kinds = memory.lines.compactMap { LineKind.kind($0) }
        #expect(kinds.filter { $0 == "file-failed/busy" }.count == 3 + 3 + 10)
        #expect(kinds.filter { $0 == "file-failed/quota" }.count == 3)
        #expect(kinds.filter { $0 == "file-failed/integrity" }.count == 10)
        sink.drain()
        let summaries = try memory.lines.filter { $0.hasPrefix(#"{"event":"suppressed""#) }.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let counts = summaries.map { "\(($0["peer"] as? [String: Any])?["id"] as? String ?? "")/\($0["code"] as? String ?? "")/\($0["count"] as? Int ?? 0)" }
        #expect(Set(counts) == ["3hx5hctom3pdm/busy/829", "otherpeer/busy/7", "3hx5hctom3pdm/quota/1"])
        #expect(summaries.allSatisfy { $0["of"] as? String == "file-failed" })
    }
}

/// `event/code` of a line, for counting.
private enum LineKind {
    static func kind(_ line: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return "\(object["event"] as? String ?? "")/\(object["code"] as? String ?? "")"
    }
}
