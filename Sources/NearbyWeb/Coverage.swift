/// Which parts of each item have been sent whole to each client (its address), and so whether every
/// item was downloaded in full by some client: a download resumed with `Range` counts with the part
/// before it, but bytes 0–49 to one client and 50–99 to another are nobody's whole file. Pure.
struct Coverage: Sendable, Equatable {
    /// Per client, per item: merged, sorted byte intervals sent (at most `maxIntervals`; beyond that
    /// the smallest gaps are forgotten, which only delays completion). At most `maxClients` clients
    /// are remembered (the one heard from longest ago forgotten first, which only delays it too).
    private(set) var sent: [String: [[Range<UInt64>]]] = [:]
    /// Clients in the order last heard from.
    private(set) var order: [String] = []
    /// Items some client has whole.
    private(set) var whole: Set<Int> = []
    let sizes: [UInt64]
    static let maxIntervals = 64
    static let maxClients = 256

    init(sizes: [UInt64]) {
        self.sizes = sizes
    }

    /// `range` of `item` was sent to `client`.
    mutating func add(_ item: Int, _ range: Range<UInt64>, client: String) {
        guard !range.isEmpty, !whole.contains(item) else { return }
        if let at = order.firstIndex(of: client) { order.remove(at: at) }
        order.append(client)
        if order.count > Self.maxClients {
            sent[order.removeFirst()] = nil
        }
        var items = sent[client] ?? sizes.map { _ in [] }
        var merged: [Range<UInt64>] = []
        for interval in (items[item] + [range]).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, interval.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, interval.upperBound)
            } else {
                merged.append(interval)
            }
        }
        items[item] = Array(merged.prefix(Self.maxIntervals))
        if items[item] == [0..<sizes[item]] { whole.insert(item) }
        sent[client] = items
    }

    /// An empty item downloaded (an empty range cannot be recorded as an interval).
    mutating func done(_ item: Int) { whole.insert(item) }

    func isComplete(_ item: Int) -> Bool { whole.contains(item) }

    var allComplete: Bool { sizes.indices.allSatisfy(isComplete) }
}
