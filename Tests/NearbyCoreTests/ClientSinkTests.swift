import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase

@Suite struct ClientSinkTests {
    private let peer = PeerRef(id: "3hx5hctom3pdm", name: "vm")

    /// Everything the sink queued, in order (the stream is finished first).
    private func drain(_ lines: AsyncStream<String>) async -> [String] {
        var out: [String] = []
        for await line in lines { out.append(line) }
        return out
    }

    @Test func aClientThatDoesNotReadHasItsEventsCountedNotHeld() async {
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let sink = ClientSink(continuation, limit: 4096)
        for _ in 0..<1000 { sink.emit(Events.Message(peer: peer, text: "hi", data: nil, bytes: 2)) }
        #expect(sink.waiting <= 4096)
        // The status comes after what was dropped is told.
        sink.replies.yield(ControlReply.status(0).line)
        sink.replies.finish()
        let out = await drain(lines)
        let shown = out.count { $0.contains(#""event":"message""#) }
        let summary = out.first { $0.contains(#""event":"suppressed""#) }
        #expect(summary?.contains(#""code":"output-full""#) == true)
        #expect(summary?.contains(#""count":\#(1000 - shown)"#) == true, "\(summary ?? "")")
        #expect(out.last == ControlReply.status(0).line)
        #expect(out.firstIndex { $0.contains("suppressed") } == shown)
    }

    @Test func readingAgainTellsWhatWasDroppedAndTakesLinesAgain() async {
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let sink = ClientSink(continuation, limit: 1000)
        var queued: [String] = []
        var iterator = lines.makeAsyncIterator()
        for _ in 0..<50 { sink.emit(Events.Message(peer: peer, text: "hi", data: nil, bytes: 2)) }
        // The client reads everything that waits: the summary follows, and new lines are taken.
        while sink.waiting > 0, let line = await iterator.next() {
            queued.append(line)
            sink.written(line)
        }
        #expect(queued.last?.contains("suppressed") == true)
        sink.emit(Events.Message(peer: peer, text: "again", data: nil, bytes: 5))
        let next = await iterator.next()
        #expect(next?.contains("again") == true)
    }
}
