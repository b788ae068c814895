import NearbyBase
/// The directories strangers made below the save directory, and the rule for them: an empty
/// directory a stranger offers (a sent tree's `photos/empty/`) is counted like a partial file — at
/// most `Limits.directories` per node and `Limits.directoriesPerPeer` per stranger, refused past
/// that — and removed, if still empty, once its lifetime has passed or with the stranger's last
/// partial; a directory made for a partial file's path goes with that partial. A directory that
/// holds a finished file is the user's from then on: forgotten. Pure: `PartialFiles` makes and
/// removes the directories and keeps the record a restarted node reads (`record`, `parse`).
struct StrangerDirectories: Sendable {
    struct Entry: Sendable, Equatable {
        /// The stranger's peer ID ("" when an earlier run's record does not say).
        let owner: String
        /// When it was made or last offered again (seconds, the caller's clock).
        var touched: Double
        /// Made for an empty directory offered as such: counted against the quota. Otherwise made
        /// for a partial file's path, and it goes with that partial.
        let offered: Bool
    }

    let limits: PartialQuota.Limits
    private(set) var entries: [String: Entry] = [:]

    init(limits: PartialQuota.Limits) { self.limits = limits }

    /// Offered directories counted now, of every stranger.
    var offered: Int { entries.values.count { $0.offered } }

    /// Why `count` more offered directories of `owner` do not fit, or nil when they do.
    func refusal(adding count: Int, owner: String) -> String? {
        let theirs = entries.values.count { $0.offered && $0.owner == owner }
        if theirs + count > limits.directoriesPerPeer {
            return "this peer already made \(theirs) empty directories here, and \(limits.directoriesPerPeer) is the most a peer "
                + "the node does not know may; send fewer, or be accepted by name (--accept-from)"
        }
        if offered + count > limits.directories {
            return "the node holds as many empty directories from peers it does not know as it allows (\(limits.directories)); "
                + "try again later"
        }
        return nil
    }

    mutating func made(_ path: String, owner: String, offered: Bool, now: Double) {
        entries[path] = Entry(owner: owner, touched: now, offered: offered)
    }

    /// Offered again (a tree sent twice): its lifetime starts over.
    mutating func touch(_ path: String, now: Double) { entries[path]?.touched = now }

    mutating func forget(_ path: String) { entries[path] = nil }

    /// A finished file was placed at `file`: the directories above it hold it, and are forgotten.
    /// Whether anything changed.
    mutating func holding(_ file: String) -> Bool {
        var changed = false
        var directory = Self.parent(of: file)
        while !directory.isEmpty, directory != "/" {
            if entries.removeValue(forKey: directory) != nil { changed = true }
            directory = Self.parent(of: directory)
        }
        return changed
    }

    /// The directories `owner` made, deepest first.
    func made(by owner: String) -> [String] {
        Self.deepestFirst(entries.filter { $0.value.owner == owner }.map(\.key))
    }

    /// The offered directories nobody offered again for `lifetime` seconds, deepest first.
    func expired(now: Double) -> [String] {
        Self.deepestFirst(entries.filter { $0.value.offered && now - $0.value.touched >= limits.lifetime }.map(\.key))
    }

    static func deepestFirst(_ paths: [String]) -> [String] {
        paths.sorted { ($0.utf8.count { $0 == UInt8(ascii: "/") }, $0) > ($1.utf8.count { $0 == UInt8(ascii: "/") }, $1) }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    // MARK: The record

    /// The record's lines: `seconds TAB owner TAB 0|1 TAB path` (absolute; paths of a peer's offer
    /// hold no control characters: `SafePath`).
    func record() -> String {
        entries.sorted { $0.key < $1.key }.map { path, entry in
            "\(Int(entry.touched))\t\(entry.owner)\t\(entry.offered ? 1 : 0)\t\(path)\n"
        }.joined()
    }

    /// The entries of a record that are below `root`; lines that do not parse, or whose path
    /// would leave `root`, are skipped (another save directory's, or not written by a node).
    static func parse(_ text: String, below root: String) -> [(String, Entry)] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let seconds = Double(fields[0]), seconds.isFinite, fields[2] == "0" || fields[2] == "1",
                fields[1].utf8.count <= 64, fields[3].hasPrefix(root + "/")
            else { return nil }
            let parts = fields[3].dropFirst(root.count + 1).split(separator: "/", omittingEmptySubsequences: false)
            guard !parts.isEmpty, parts.count <= SafePath.maxDepth, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
                return nil
            }
            return (String(fields[3]), Entry(owner: String(fields[1]), touched: seconds, offered: fields[2] == "1"))
        }
    }
}
