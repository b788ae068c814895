/// When a `progress` event is due: at most one an interval, and always the last. The one place the
/// interval is written; every transfer (the session's, LocalSend's, the web share's) paces with it.
/// A value: a loop owns one in a `var`, callbacks on several threads share one in a `Locked`.
package struct ProgressPacer: Sendable {
    /// At most ten progress events a second.
    package static let interval = Duration.milliseconds(100)

    private var last: ContinuousClock.Instant?

    /// No event is due before an interval after `started`; with nil, the first one is due at once.
    package init(since started: ContinuousClock.Instant? = nil) { last = started }

    /// Whether to say progress now (always when `final`); if so, the next is an interval away.
    package mutating func due(final: Bool = false, at now: ContinuousClock.Instant = .now) -> Bool {
        if !final, let last, now - last < Self.interval { return false }
        last = now
        return true
    }
}
