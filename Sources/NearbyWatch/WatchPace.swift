import NearbyBase

/// How much of a flood live `watch` decodes. Every packet is read and counted (per source too);
/// it is decoded and judged — rules, the table, its line — only while its source and the link as
/// a whole are within their budgets, so however fast a flood comes watch's work stays bounded and
/// the host's daemon keeps the CPU it needs to answer. The budgets are token buckets refilled by
/// the packets' own clock (`perSecond` for the link, `perSource` for each source, a second's worth
/// at most); they narrow, halving down to 1/16, in each second watch was behind (the kernel
/// dropped packets, or watch's thread used more than `busy` of a core) and widen back, doubling,
/// once it is well within. Pure: the capture loop hands it times, drops and CPU seconds.
package struct WatchPace: Sendable {
    package static let perSecond = 2000.0
    package static let perSource = 500.0
    /// CPU seconds a second of watch's capture thread past which it backs off.
    package static let busy = 0.5
    static let narrowest = 1.0 / 16

    struct Bucket: Sendable {
        var tokens: Double
        var time: Double
    }

    private var link: Bucket?
    private var sources = BoundedTable<String, Bucket>(capacity: 1024)
    /// What the budgets are now, of their full rates (1, 1/2, … 1/16).
    package private(set) var scale = 1.0
    /// Packets counted and not decoded since watching began.
    package private(set) var skimmed = 0
    private var seen = 0
    private var decoded = 0
    private var sampling = false

    package init() {}

    /// Whether the packet `source` sent at `time` is decoded; if not, it is only counted.
    package mutating func admit(_ source: String, at time: Double) -> Bool {
        seen += 1
        var whole = Self.refill(link, rate: Self.perSecond * scale, at: time)
        var own = Self.refill(sources[source], rate: Self.perSource * scale, at: time)
        let admitted = whole.tokens >= 1 && own.tokens >= 1
        if admitted {
            whole.tokens -= 1
            own.tokens -= 1
            decoded += 1
        } else {
            skimmed += 1
        }
        link = whole
        sources.set(source, own, at: time)
        return admitted
    }

    /// Once a second: `dropped` packets the kernel dropped in it (`droppedTotal` since watching
    /// began), `cpu` seconds watch's thread used in it. A `sampling` event for each second in which
    /// watch skimmed packets or the kernel dropped some, and one more (`every` 1) once it decodes
    /// every packet again.
    package mutating func second(dropped: Int, droppedTotal: Int, cpu: Double) -> Events.WatchSampling? {
        if dropped > 0 || cpu > Self.busy {
            scale = max(scale / 2, Self.narrowest)
        } else if cpu < Self.busy / 2 {
            scale = min(scale * 2, 1)
        }
        defer { seen = 0; decoded = 0 }
        let behind = decoded < seen || dropped > 0
        guard behind || sampling else { return nil }
        sampling = behind
        let every = decoded < seen ? max(2, Int((Double(seen) / Double(max(decoded, 1))).rounded())) : 1
        return Events.WatchSampling(every: every, packets: seen, decoded: decoded, skimmed: skimmed, dropped: droppedTotal)
    }

    static func refill(_ bucket: Bucket?, rate: Double, at time: Double) -> Bucket {
        guard var bucket else { return Bucket(tokens: rate, time: time) }
        if time > bucket.time { bucket.tokens += (time - bucket.time) * rate }
        bucket.tokens = min(bucket.tokens, rate)
        bucket.time = max(bucket.time, time)
        return bucket
    }
}
