/// The rule for the partial files of strangers (peers `--auto-accept`, or `stream --listen` without
/// `--from`, let in): together at most `files` of them and `bytes` on disk; past that, the oldest
/// partial of the stranger with the most bytes goes (one no transfer is writing first); a partial
/// nobody writes expires `lifetime` seconds after it was last written. Pure: it says which partials
/// to delete, `PartialFiles` deletes them. Partials of the peers you chose are not counted here.
package struct PartialQuota: Sendable {
    package struct Limits: Sendable, Equatable {
        package var files = 256
        package var bytes: UInt64 = 1 << 30
        /// Seconds a partial nobody writes is kept for a resume.
        package var lifetime: Double = 24 * 3600
        /// Empty directories strangers offered, all of them together (`StrangerDirectories`).
        package var directories = 256
        /// Empty directories one stranger offered (each level of a deep path counts).
        package var directoriesPerPeer = 64

        package init(files: Int = 256, bytes: UInt64 = 1 << 30, lifetime: Double = 24 * 3600, directories: Int = 256, directoriesPerPeer: Int = 64) {
            self.files = files
            self.bytes = bytes
            self.lifetime = lifetime
            self.directories = directories
            self.directoriesPerPeer = directoriesPerPeer
        }

        /// The defaults, with `NEARBY_PARTIAL_FILES`, `NEARBY_PARTIAL_BYTES`,
        /// `NEARBY_PARTIAL_LIFETIME` (seconds), `NEARBY_PARTIAL_DIRECTORIES` and
        /// `NEARBY_PARTIAL_DIRECTORIES_PER_PEER` from `environment`.
        package static func from(environment: [String: String]) -> Limits {
            var limits = Limits()
            func count(_ name: String) -> Int? { environment[name].flatMap(Int.init).flatMap { $0 >= 0 ? $0 : nil } }
            if let files = count("NEARBY_PARTIAL_FILES") { limits.files = files }
            if let directories = count("NEARBY_PARTIAL_DIRECTORIES") { limits.directories = directories }
            if let directories = count("NEARBY_PARTIAL_DIRECTORIES_PER_PEER") { limits.directoriesPerPeer = directories }
            if let bytes = environment["NEARBY_PARTIAL_BYTES"].flatMap(UInt64.init) { limits.bytes = bytes }
            if let seconds = environment["NEARBY_PARTIAL_LIFETIME"].flatMap(Double.init), seconds > 0, seconds.isFinite {
                limits.lifetime = seconds
            }
            return limits
        }
    }

    struct Entry: Sendable, Equatable {
        /// The stranger's peer ID.
        let owner: String
        var bytes: UInt64
        /// When it was last written (seconds, the caller's clock).
        var touched: Double
        /// A transfer is writing it now.
        var active: Bool
        /// Arrival order: the smallest is the oldest.
        let order: Int
    }

    let limits: Limits
    private(set) var entries: [String: Entry] = [:]
    private var arrivals = 0
    /// The bytes of every entry (kept as entries change: `grew` runs once per data frame).
    private(set) var total: UInt64 = 0

    package init(limits: Limits = Limits()) { self.limits = limits }

    package var count: Int { entries.count }
    package var bytes: UInt64 { total }

    /// A stranger's transfer starts writing `path` (new, or resumed with `bytes` already there).
    /// Returns the other partials to delete so that the quota holds.
    package mutating func begin(_ path: String, owner: String, bytes: UInt64, now: Double) -> [String] {
        if var entry = entries[path] {
            total = total - entry.bytes + bytes
            entry.active = true
            entry.bytes = bytes
            entry.touched = now
            entries[path] = entry
        } else {
            arrivals += 1
            total += bytes
            entries[path] = Entry(owner: owner, bytes: bytes, touched: now, active: true, order: arrivals)
        }
        return evictions(sparing: path)
    }

    /// A partial an earlier run of the node left (`touched`: its last write): counted, idle, so that
    /// it expires. Returns the partials to delete so that the quota holds.
    package mutating func adopt(_ path: String, owner: String, bytes: UInt64, touched: Double) -> [String] {
        guard entries[path] == nil else { return [] }
        arrivals += 1
        total += bytes
        entries[path] = Entry(owner: owner, bytes: bytes, touched: touched, active: false, order: arrivals)
        return evictions(sparing: path)
    }

    /// `count` more bytes were written to `path`; the partials to delete to stay within the quota.
    package mutating func grew(_ path: String, by count: UInt64, now: Double) -> [String] {
        guard var entry = entries[path] else { return [] }
        entry.bytes += count
        entry.touched = now
        entries[path] = entry
        total += count
        return total > limits.bytes ? evictions(sparing: path) : []
    }

    /// The transfer stopped and left `path` for a resume: from now on it may expire.
    package mutating func idle(_ path: String, now: Double) {
        entries[path]?.active = false
        entries[path]?.touched = now
    }

    /// `path` is gone (placed as a finished file, or deleted).
    package mutating func remove(_ path: String) {
        if let entry = entries.removeValue(forKey: path) { total -= entry.bytes }
    }

    /// The partials nobody wrote for `lifetime` seconds, forgotten here: the caller deletes them.
    package mutating func expired(now: Double) -> [String] {
        let gone = entries.filter { !$0.value.active && now - $0.value.touched >= limits.lifetime }.map(\.key).sorted()
        for path in gone { remove(path) }
        return gone
    }

    /// While over the quota: the oldest partial of the owner with the most bytes, among those no
    /// transfer writes (when there are none, among those being written), never `spared` (the one
    /// growing now: a single transfer is bounded by the size it announced).
    private mutating func evictions(sparing spared: String) -> [String] {
        var victims: [String] = []
        while entries.count > limits.files || bytes > limits.bytes {
            let others = entries.filter { $0.key != spared }
            let idle = others.filter { !$0.value.active }
            let pool = idle.isEmpty ? others : idle
            guard !pool.isEmpty else { break }
            var weight: [String: UInt64] = [:]
            for entry in entries.values { weight[entry.owner, default: 0] += entry.bytes }
            let owners = Set(pool.values.map(\.owner))
            guard let heaviest = owners.max(by: { (weight[$0] ?? 0, $1) < (weight[$1] ?? 0, $0) }),
                let victim = pool.filter({ $0.value.owner == heaviest }).min(by: { $0.value.order < $1.value.order })
            else { break }
            remove(victim.key)
            victims.append(victim.key)
        }
        return victims
    }
}
