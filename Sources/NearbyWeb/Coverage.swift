/// Which parts of each item have been sent whole, and so whether every item was downloaded in full
/// (a download resumed with `Range` counts with the part before it).
struct Coverage: Sendable, Equatable {
    /// Per item: merged, sorted byte intervals sent (at most `maxIntervals`; beyond that the
    /// smallest gaps are forgotten, which only delays `complete`).
    private(set) var sent: [[Range<UInt64>]]
    let sizes: [UInt64]
    static let maxIntervals = 64

    init(sizes: [UInt64]) {
        self.sizes = sizes
        sent = sizes.map { _ in [] }
    }

    mutating func add(_ item: Int, _ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var merged: [Range<UInt64>] = []
        for interval in (sent[item] + [range]).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, interval.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, interval.upperBound)
            } else {
                merged.append(interval)
            }
        }
        sent[item] = Array(merged.prefix(Self.maxIntervals))
    }

    func isComplete(_ item: Int) -> Bool {
        sizes[item] == 0 ? done0.contains(item) : sent[item] == [0..<sizes[item]]
    }

    /// Empty items downloaded (an empty range cannot be recorded as an interval).
    var done0: Set<Int> = []

    var allComplete: Bool { sizes.indices.allSatisfy(isComplete) }
}
