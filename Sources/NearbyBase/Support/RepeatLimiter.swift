/// Output that a stranger drives — a `rejected` event per connection to our port, a log line per
/// dropped datagram — summarised instead of repeated: at most `burst` of one kind per `window`,
/// then, when the window ends, one summary with how many were held back. A pure value: the caller
/// passes the time (tests inject it) and prints what it is told to.
///
/// A window starts with the first line of its kind and lasts `window`; the next line after it
/// starts a new one. So a flood that never stops prints `burst` lines and one summary per window
/// and kind, and a quiet kind prints every line.
package struct RepeatLimiter<Key: Hashable & Sendable>: Sendable {
    package static var defaultBurst: Int { 5 }
    package static var defaultWindow: Duration { .seconds(10) }
    /// Kinds counted at once. Kinds are few (event codes, places in the code), none named by a
    /// peer; this only keeps memory bounded if one ever were: a kind beyond them is printed as it
    /// comes.
    package static var maxKinds: Int { 64 }

    package let burst: Int
    package let window: Duration

    /// How many lines of a kind were held back in a window that ended.
    package struct Summary: Sendable, Equatable {
        package var key: Key
        package var count: Int
        /// The window's length, rounded up to whole seconds ("in the last 10 s").
        package var seconds: Int
    }

    private struct Slot: Sendable {
        var start: ContinuousClock.Instant
        var shown: Int
        var held: Int
    }

    private var slots: [Key: Slot] = [:]

    package init(burst: Int = Self.defaultBurst, window: Duration = Self.defaultWindow) {
        self.burst = max(1, burst)
        self.window = window
    }

    /// Whether a line of kind `key` is printed now; with the summary of its kind's previous window,
    /// to print first, when that window ended with lines held back.
    package mutating func admit(_ key: Key, now: ContinuousClock.Instant) -> (show: Bool, summary: Summary?) {
        var summary: Summary?
        if let slot = slots[key], now - slot.start >= window {
            summary = self.summary(key, slot)
            slots[key] = nil
        }
        guard var slot = slots[key] else {
            if slots.count >= Self.maxKinds {
                // Windows that ended with nothing held back owe no summary.
                slots = slots.filter { now - $0.value.start < window || $0.value.held > 0 }
                guard slots.count < Self.maxKinds else { return (true, summary) }
            }
            slots[key] = Slot(start: now, shown: 1, held: 0)
            return (true, summary)
        }
        if slot.shown < burst {
            slot.shown += 1
            slots[key] = slot
            return (true, summary)
        }
        slot.held += 1
        slots[key] = slot
        return (false, summary)
    }

    /// The summaries of every window that has ended by `now` with lines held back (each reported
    /// once), and when the next one ends: the caller looks again then.
    package mutating func due(now: ContinuousClock.Instant) -> (summaries: [Summary], next: ContinuousClock.Instant?) {
        var summaries: [Summary] = []
        var next: ContinuousClock.Instant?
        for (key, slot) in slots {
            if now - slot.start >= window {
                if let summary = summary(key, slot) { summaries.append(summary) }
                slots[key] = nil
            } else if slot.held > 0 {
                let end = slot.start + window
                next = next.map { min($0, end) } ?? end
            }
        }
        return (summaries, next)
    }

    private func summary(_ key: Key, _ slot: Slot) -> Summary? {
        guard slot.held > 0 else { return nil }
        let (seconds, attoseconds) = window.components
        return Summary(key: key, count: slot.held, seconds: Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }

    /// `19873` as `19,873`.
    package static func grouped(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (count < 0 ? "-" : "") + out
    }
}
