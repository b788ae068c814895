import Foundation
import NearbyBase

/// Event lines for one control client, written in order as the work happens — and bounded: the
/// client's copy of its work's events waits for the client to read it, and a client that stops
/// reading must not make the node hold them without end. Past `limit` bytes waiting, lines are
/// dropped and counted by kind (never silently): once the client has read half of what waited, or
/// before the reply that ends the request, one `suppressed` event (`code` `output-full`) per kind
/// says how many. The node's own output has every line; replies (`status`, `stream_ready`) are
/// never dropped.
final class ClientSink: EventSink {
    /// Bytes of event lines waiting for one client (`ResourceBudget`: 1 MiB, or
    /// `NEARBY_CONTROL_CLIENT_QUEUE_BYTES`).
    static var standardLimit: Int { ResourceBudget.shared.limits.controlClientBytes }

    private let continuation: AsyncStream<String>.Continuation
    private let encoder = EventEncoder()
    let limit: Int
    private struct State {
        var waiting = 0
        var drops = OutputDrops()
    }
    private let state = Locked(State())

    init(_ continuation: AsyncStream<String>.Continuation, limit: Int = ClientSink.standardLimit) {
        self.continuation = continuation
        self.limit = max(limit, 1)
    }

    func emit(_ body: some EventBody) { emitLine(encoder.line(body)) }

    func emitLine(_ line: String) {
        let text = ControlReply.event(line).line
        state.withLock { state in
            // Once one is dropped, the rest wait for the summary: it is told before them.
            guard state.drops.isEmpty, state.waiting + text.utf8.count <= limit else { return state.drops.count(line) }
            state.waiting += text.utf8.count
            continuation.yield(text)
        }
    }

    /// Bytes waiting for the client now.
    var waiting: Int { state.withLock { $0.waiting } }

    /// The client's writer wrote `text`: its bytes no longer wait. Once half the limit is free
    /// again, what was dropped is told.
    func written(_ text: String) {
        state.withLock { state in
            state.waiting = max(0, state.waiting - text.utf8.count)
            if state.waiting <= limit / 2 { tellDrops(&state) }
        }
    }

    /// A reply of the request (never dropped), after what was dropped is told.
    func reply(_ text: String) {
        state.withLock { state in
            tellDrops(&state)
            state.waiting += text.utf8.count
            continuation.yield(text)
        }
    }

    /// No more lines: the writer ends once it has written what waits.
    func finish() { continuation.finish() }

    /// The replies of the request, as the server writes them: `yield` (`reply`) and `finish`.
    var replies: Replies { Replies(sink: self) }

    struct Replies: Sendable {
        let sink: ClientSink
        func yield(_ text: String) { sink.reply(text) }
        func finish() { sink.finish() }
    }

    private func tellDrops(_ state: inout State) {
        guard !state.drops.isEmpty else { return }
        for summary in state.drops.take(now: .now) {
            let text = ControlReply.event(encoder.line(summary)).line
            state.waiting += text.utf8.count
            continuation.yield(text)
        }
    }
}
