/// A node's own events, with what a stranger can make it repeat summarised (`TimedRepeatLimiter`): its
/// `rejected` events and the `error` events it prints while it runs, at most 5 of one kind and code
/// in 10 s, then one `suppressed` event with the count when the 10 s are over. Everything a user's
/// script works with — `connected`, `message`, file and stream events, `invitation`, a command's
/// final `error` (printed by the command, not through this sink) — passes untouched, as does
/// `daemon-unavailable`, which no stranger causes. A file channel the node refused for its budget
/// (`file-failed` received with code `busy` or `quota`: a peer can open thousands) is summarised
/// per peer, at most 3 a second, the rest counted in a `suppressed` event that names the peer.
package final class LimitedSink: EventSink {
    private let base: any EventSink
    private let gate: TimedRepeatLimiter<Kind>
    private let refusals: TimedRepeatLimiter<Kind>

    /// One kind of repeat: the event and its code (and the peer, for refused file channels).
    package struct Kind: Hashable, Sendable {
        package var event: String
        package var code: String
        package var peer: String?
        package var name: String?
    }

    /// The codes of a receiving `file-failed` that the node's budget, not the transfer, decided.
    static let refusalCodes: Set<String> = ["busy", "quota"]

    package init(
        _ base: any EventSink, burst: Int = 5, window: Duration = .seconds(10), refusalBurst: Int = 3, refusalWindow: Duration = .seconds(1)
    ) {
        self.base = base
        let report: @Sendable (RepeatLimiter<Kind>.Summary) -> Void = { summary in
            base.emit(Events.Suppressed(
                of: summary.key.event, code: summary.key.code, count: summary.count, seconds: summary.seconds,
                peer: summary.key.peer.map { PeerRef(id: $0, name: summary.key.name) }))
        }
        gate = TimedRepeatLimiter(burst: burst, window: window, report: report)
        refusals = TimedRepeatLimiter(burst: refusalBurst, window: refusalWindow, report: report)
    }

    package func emit(_ body: some EventBody) {
        if let failed = body as? Events.FileFailed, failed.direction == "receive", Self.refusalCodes.contains(failed.code) {
            let kind = Kind(event: Events.FileFailed.event, code: failed.code, peer: failed.peer.id, name: failed.peer.name)
            if refusals.admit(kind) { base.emit(body) }
            return
        }
        guard let kind = Self.kind(of: body) else { return base.emit(body) }
        if gate.admit(kind) { base.emit(body) }
    }

    /// Lines relayed from another node were limited there.
    package func emitLine(_ line: String) { base.emitLine(line) }

    /// Reports what is still held back: the node is stopping.
    package func drain() {
        gate.drain()
        refusals.drain()
    }

    static func kind(of body: some EventBody) -> Kind? {
        switch body {
        case let rejected as Events.Rejected:
            Kind(event: Events.Rejected.event, code: rejected.code)
        case let failure as Events.Failure where failure.code != "daemon-unavailable":
            Kind(event: Events.Failure.event, code: failure.code)
        default:
            nil
        }
    }
}

extension Events {
    /// How many events of one kind and code a node held back in the last `seconds` (`LimitedSink`).
    package struct Suppressed: EventBody {
        package static let event = "suppressed"
        /// The kind of event held back (`rejected`, `error`).
        package var of: String
        package var code: String
        package var count: Int
        package var seconds: Int
        /// The peer whose refused file channels were counted (`file-failed`); absent otherwise.
        package var peer: PeerRef?
    }
}
