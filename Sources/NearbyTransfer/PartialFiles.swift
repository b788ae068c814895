import Foundation
import NearbyBase
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The partial files of a node, over every link: which are being written (the same file arriving
/// twice at once gets a partial file of its own rather than sharing one), and, for strangers'
/// partials, the disk quota (`PartialQuota`): this type deletes what the quota gives up, stops the
/// transfer writing it, expires what nobody resumed, and removes the empty directories a
/// stranger's path made with its last partial. Public for the other protocols' receivers
/// (LocalSend, the web server), whose strangers' uploads are charged to the same quota.
package final class PartialFiles: Sendable {
    private struct State {
        var claimed: Set<String> = []
        var quota: PartialQuota
        /// How to stop the transfer writing a stranger's partial, should the quota take it.
        var stops: [String: @Sendable () -> Void] = [:]
        /// Whose each counted partial is, for the directories that go with its last one.
        var owners: [String: String] = [:]
        /// Directories strangers made (absolute paths), and the empty ones they offered.
        var directories: StrangerDirectories
        /// Bumped on each change of `directories`, so that the record is never written older.
        var generation = 0
    }

    private let state: Locked<State>
    /// The generation of the record last written.
    private let written = Locked(0)
    package let limits: PartialQuota.Limits

    /// The record of the directories strangers made (`NearbyPaths.strangersDirectories`; nil: none
    /// kept): a restarted node reads it (`adopt`) to remove them as this run would have.
    let record: String?

    package init(limits: PartialQuota.Limits = PartialQuota.Limits(), record: String? = nil) {
        self.limits = limits
        self.record = record
        state = Locked(State(quota: PartialQuota(limits: limits), directories: StrangerDirectories(limits: limits)))
    }

    static var now: Double { Date().timeIntervalSince1970 }

    /// Claims `path`; false when another transfer holds it.
    package func claim(_ path: String) -> Bool { state.withLock { $0.claimed.insert(path).inserted } }
    package func release(_ path: String) { _ = state.withLock { $0.claimed.remove(path) } }

    /// What the quota counts now (tests, logs).
    package var counted: (files: Int, bytes: UInt64) { state.withLock { ($0.quota.count, $0.quota.bytes) } }

    // MARK: Directories

    /// Makes `directory` below `root` for a stranger's file, level by level, remembering the
    /// levels it made so that they go again with the partial. Throws the errno.
    package func makeDirectories(_ directory: String, below root: String, owner: String = "") throws(NearbyError) {
        guard directory.hasPrefix(root + "/") else { return }
        var path = root
        var made = false
        defer { if made { persist() } }
        for part in directory.dropFirst(root.count + 1).split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o777) == 0 {
                made = true
                state.withLock { state in
                    state.directories.made(path, owner: owner, offered: false, now: Self.now)
                    state.generation += 1
                }
            } else if errno != EEXIST {
                throw .ioFailure(path: path, reason: Transfer.errorText(errno))
            }
        }
    }

    /// Why an empty directory a stranger offered was not made: a sentence and the code for the
    /// refusal (`quota`: over the quota; `io-error`: the file system said no).
    package struct Refused: Error, Equatable {
        package let code: TransferCode
        package let reason: String

        package init(code: TransferCode, reason: String) {
            self.code = code
            self.reason = reason
        }
    }

    /// Makes the empty directory `parts` a stranger offered below `root`, each level it makes
    /// counted against the quota on strangers' directories — all or nothing: past the quota,
    /// nothing is made. Nil when made, else why not.
    package func makeOffered(_ parts: [String], below root: String, owner: String) -> Refused? {
        let now = Self.now
        let refused = state.withLock { state -> Refused? in
            var levels: [String] = []
            var path = root
            for part in parts {
                path += "/" + part
                var info = stat()
                if lstat(path, &info) != 0 {
                    levels.append(path)
                } else if state.directories.entries[path]?.owner == owner {
                    state.directories.touch(path, now: now)
                }
            }
            if let why = state.directories.refusal(adding: levels.count, owner: owner) { return Refused(code: .quota, reason: why) }
            for level in levels {
                guard mkdir(level, 0o777) == 0 || errno == EEXIST else {
                    return Refused(code: .ioError, reason: "cannot create \(level.dropFirst(root.count + 1)): \(Transfer.errorText(errno))")
                }
                state.directories.made(level, owner: owner, offered: true, now: now)
            }
            state.generation += 1
            return nil
        }
        persist()
        return refused
    }

    /// Removes the directories above `partial` that a stranger's path made, deepest first, while
    /// they are empty.
    private func prune(above partial: String) {
        var directory = StrangerDirectories.parent(of: partial)
        var removed = false
        while state.withLock({ $0.directories.entries[directory].map { !$0.offered } ?? false }), rmdir(directory) == 0 {
            removed = true
            state.withLock { state in
                state.directories.forget(directory)
                state.generation += 1
            }
            directory = StrangerDirectories.parent(of: directory)
        }
        if removed { persist() }
    }

    /// With a stranger's last partial deleted, the directories it made go too, while empty; and
    /// the empty ones it offered when their lifetime is over (`sweep`).
    private func removeEmpty(_ directories: [String], keepingOffered: Bool) {
        guard !directories.isEmpty else { return }
        for directory in directories {
            let gone = rmdir(directory) == 0 || errno == ENOENT
            state.withLock { state in
                guard let entry = state.directories.entries[directory] else { return }
                // One that is not empty holds something else now (a finished file, the user's):
                // no longer the stranger's — but an offered one stays counted for its lifetime.
                if gone || !(keepingOffered && entry.offered) {
                    state.directories.forget(directory)
                    state.generation += 1
                }
            }
        }
        persist()
    }

    /// A partial of each of `owners` was deleted: for those with none left, the directories they
    /// made go too, while empty (an empty one they offered stays counted for its lifetime if not).
    private func lastPartialGone(of owners: Set<String>) {
        for owner in owners where !owner.isEmpty {
            let left = state.withLock { state -> [String]? in
                state.owners.values.contains(owner) ? nil : state.directories.made(by: owner)
            }
            if let left { removeEmpty(left, keepingOffered: true) }
        }
    }

    /// Writes the record of the directories strangers made (atomically: a new file renamed over
    /// the old one), unless a newer one was written meanwhile.
    private func persist() {
        guard let record else { return }
        let (text, generation) = state.withLock { state in (state.directories.record(), state.generation) }
        written.withLock { last in
            guard generation > last else { return }
            last = generation
            if text.isEmpty {
                unlink(record)
                return
            }
            let temporary = record + ".\(getpid()).tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return NearbyLog.logger.info("cannot write \(record): \(Transfer.errorText(errno))") }
            let failure = Array(text.utf8).withUnsafeBytes { Transfer.pwriteAll(fd, $0, at: 0) }
            close(fd)
            if failure != 0 || rename(temporary, record) != 0 {
                NearbyLog.logger.info("cannot write \(record): \(Transfer.errorText(failure != 0 ? failure : errno))")
                unlink(temporary)
            }
        }
    }

    /// Reads the record an earlier run left (at most 16 MiB of it): its directories below `root`,
    /// where they are still directories, are this run's to remove.
    private func adoptDirectories(below root: String) {
        guard let record, let handle = FileHandle(forReadingAtPath: record) else { return }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 16 << 20), let text = String(data: data, encoding: .utf8) else { return }
        state.withLock { state in
            for (path, entry) in StrangerDirectories.parse(text, below: root) where state.directories.entries[path] == nil {
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
                state.directories.made(path, owner: entry.owner, offered: entry.offered, now: entry.touched)
            }
            state.generation += 1
        }
        persist()
    }

    // MARK: The quota

    /// A stranger's transfer starts writing `path` (`bytes` already there when it resumes); `stop`
    /// ends that transfer should the quota take its partial while it is written.
    package func begin(_ path: String, owner: String, bytes: UInt64, stop: @escaping @Sendable () -> Void) {
        let victims = state.withLock { state in
            state.stops[path] = stop
            state.owners[path] = owner
            return take(state.quota.begin(path, owner: owner, bytes: bytes, now: Self.now), from: &state)
        }
        delete(victims, why: "the quota for unfinished files from peers this node does not know is full")
    }

    /// `count` more bytes of a stranger's partial were written.
    package func grew(_ path: String, by count: Int) {
        let victims = state.withLock { state in
            take(state.quota.grew(path, by: UInt64(count), now: Self.now), from: &state)
        }
        delete(victims, why: "the quota for unfinished files from peers this node does not know is full")
    }

    /// A stranger's transfer stopped and left `path` for a resume: it expires if nobody resumes it.
    func idle(_ path: String) {
        state.withLock { state in
            state.stops[path] = nil
            state.quota.idle(path, now: Self.now)
        }
    }

    /// `path` is no longer a partial file: placed under its final name, or deleted by its transfer
    /// (`deleted`: then the empty directories the stranger's path made go too).
    package func gone(_ path: String, deleted: Bool) {
        let (owner, held) = state.withLock { state in
            state.stops[path] = nil
            let owner = state.owners.removeValue(forKey: path)
            state.quota.remove(path)
            // Placed: the directories above hold a finished file, the user's from now on.
            let held = !deleted && state.directories.holding(path)
            if held { state.generation += 1 }
            return (owner, held)
        }
        if held { persist() }
        guard deleted else { return }
        prune(above: path)
        if let owner { lastPartialGone(of: [owner]) }
    }

    /// Deletes the strangers' partials nobody resumed within the lifetime; how many.
    @discardableResult
    func sweep() -> Int {
        let victims = state.withLock { state in take(state.quota.expired(now: Self.now), from: &state) }
        delete(victims, why: "nobody resumed it within \(Int(limits.lifetime)) s")
        removeEmpty(state.withLock { $0.directories.expired(now: Self.now) }, keepingOffered: false)
        return victims.count
    }

    /// Counts the strangers' partials an earlier run left below `root` (their names say so:
    /// `FileReceiver.isStrangersPartial`), looking at no more than `most` entries, so that they
    /// expire and count as this run's do; their owner is unknown (""). Returns how many.
    @discardableResult
    func adopt(below root: String, most: Int = 100_000) -> Int {
        adoptDirectories(below: root)
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var found: [(path: String, bytes: UInt64, touched: Double)] = []
        var seen = 0
        while seen < most, let relative = walker.nextObject() as? String {
            seen += 1
            let name = (relative as NSString).lastPathComponent
            guard FileReceiver.isStrangersPartial(name) else { continue }
            let path = root + "/" + relative
            // One that cannot be resumed (a LocalSend upload's) is worthless once its run is over.
            if Transfer.isUnresumablePartial(name), !state.withLock({ $0.claimed.contains(path) }) {
                NearbyLog.logger.info("deleting the partial file \(path): an upload that cannot be resumed, left by an earlier run")
                unlink(path)
                continue
            }
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            #if canImport(Darwin)
            let modified = Double(info.st_mtimespec.tv_sec)
            #else
            let modified = Double(info.st_mtim.tv_sec)
            #endif
            found.append((path, UInt64(max(0, info.st_size)), modified))
        }
        var victims: [Victim] = []
        state.withLock { state in
            for partial in found where !state.claimed.contains(partial.path) {
                victims += take(state.quota.adopt(partial.path, owner: "", bytes: partial.bytes, touched: partial.touched), from: &state)
            }
        }
        delete(victims, why: "the quota for unfinished files from peers this node does not know is full")
        return found.count
    }

    /// Sweeps until cancelled, often enough that a partial lives at most a quarter of its lifetime
    /// (at most a minute) past it.
    package func sweepUntilCancelled(adopting root: String? = nil) async {
        if let root { adopt(below: root) }
        let interval = Duration.milliseconds(Int64(max(50, min(60_000, limits.lifetime * 250))))
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            sweep()
        }
    }

    /// The victims to delete, with the stops of the transfers writing them. One that an offer has
    /// claimed to resume (idle, not started yet) is spared: counted again when its transfer starts.
    private func take(_ victims: [String], from state: inout State) -> [Victim] {
        victims.compactMap { path in
            let stop = state.stops.removeValue(forKey: path)
            let owner = state.owners.removeValue(forKey: path) ?? ""
            return stop == nil && state.claimed.contains(path) ? nil : (path, stop, owner)
        }
    }

    /// Deletes partials the quota gave up, stopping the transfers that were writing them.
    /// A partial the quota gave up: its path, the stop of the transfer writing it, its owner.
    private typealias Victim = (String, (@Sendable () -> Void)?, String)

    private func delete(_ victims: [Victim], why: String) {
        for (path, stop, _) in victims {
            NearbyLog.logger.info("deleting the partial file \(path): \(why)")
            stop?()
            unlink(path)
            prune(above: path)
        }
        lastPartialGone(of: Set(victims.map(\.2)))
    }
}
