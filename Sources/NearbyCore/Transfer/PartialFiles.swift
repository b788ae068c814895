import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The partial files of a node, over every link: which are being written (the same file arriving
/// twice at once gets a partial file of its own rather than sharing one), and, for strangers'
/// partials, the disk quota (`PartialQuota`): this type deletes what the quota gives up, stops the
/// transfer writing it, expires what nobody resumed, and removes the empty directories a
/// stranger's path made with its last partial.
final class PartialFiles: Sendable {
    private struct State {
        var claimed: Set<String> = []
        var quota: PartialQuota
        /// How to stop the transfer writing a stranger's partial, should the quota take it.
        var stops: [String: @Sendable () -> Void] = [:]
        /// Directories a stranger's path made (absolute): removed once empty of its partials.
        var made: Set<String> = []
    }

    private let state: Mutex<State>
    let limits: PartialQuota.Limits

    init(limits: PartialQuota.Limits = PartialQuota.Limits()) {
        self.limits = limits
        state = Mutex(State(quota: PartialQuota(limits: limits)))
    }

    static var now: Double { Date().timeIntervalSince1970 }

    /// Claims `path`; false when another transfer holds it.
    func claim(_ path: String) -> Bool { state.withLock { $0.claimed.insert(path).inserted } }
    func release(_ path: String) { _ = state.withLock { $0.claimed.remove(path) } }

    /// What the quota counts now (tests, logs).
    var counted: (files: Int, bytes: UInt64) { state.withLock { ($0.quota.count, $0.quota.bytes) } }

    // MARK: Directories

    /// Makes `directory` below `root` for a stranger's file, level by level, remembering the
    /// levels it made so that they go again with the stranger's last partial. Throws the errno.
    func makeDirectories(_ directory: String, below root: String) throws(NearbyError) {
        guard directory.hasPrefix(root + "/") else { return }
        var path = root
        for part in directory.dropFirst(root.count + 1).split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o777) == 0 {
                state.withLock { _ = $0.made.insert(path) }
            } else if errno != EEXIST {
                throw .ioFailure(path: path, reason: Transfer.errorText(errno))
            }
        }
    }

    /// Removes the directories above `partial` that a stranger's path made, deepest first, while
    /// they are empty.
    private func prune(above partial: String) {
        var directory = (partial as NSString).deletingLastPathComponent
        while state.withLock({ $0.made.contains(directory) }), rmdir(directory) == 0 {
            state.withLock { _ = $0.made.remove(directory) }
            directory = (directory as NSString).deletingLastPathComponent
        }
    }

    // MARK: The quota

    /// A stranger's transfer starts writing `path` (`bytes` already there when it resumes); `stop`
    /// ends that transfer should the quota take its partial while it is written.
    func begin(_ path: String, owner: String, bytes: UInt64, stop: @escaping @Sendable () -> Void) {
        let victims = state.withLock { state in
            state.stops[path] = stop
            return take(state.quota.begin(path, owner: owner, bytes: bytes, now: Self.now), from: &state)
        }
        delete(victims, why: "the quota for unfinished files from peers this node does not know is full")
    }

    /// `count` more bytes of a stranger's partial were written.
    func grew(_ path: String, by count: Int) {
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
    func gone(_ path: String, deleted: Bool) {
        state.withLock { state in
            state.stops[path] = nil
            state.quota.remove(path)
        }
        if deleted { prune(above: path) }
    }

    /// Deletes the strangers' partials nobody resumed within the lifetime; how many.
    @discardableResult
    func sweep() -> Int {
        let victims = state.withLock { state in take(state.quota.expired(now: Self.now), from: &state) }
        delete(victims, why: "nobody resumed it within \(Int(limits.lifetime)) s")
        return victims.count
    }

    /// Counts the strangers' partials an earlier run left below `root` (their names say so:
    /// `FileReceiver.isStrangersPartial`), looking at no more than `most` entries, so that they
    /// expire and count as this run's do; their owner is unknown (""). Returns how many.
    @discardableResult
    func adopt(below root: String, most: Int = 100_000) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var found: [(path: String, bytes: UInt64, touched: Double)] = []
        var seen = 0
        while seen < most, let relative = walker.nextObject() as? String {
            seen += 1
            guard FileReceiver.isStrangersPartial((relative as NSString).lastPathComponent) else { continue }
            let path = root + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            #if canImport(Darwin)
            let modified = Double(info.st_mtimespec.tv_sec)
            #else
            let modified = Double(info.st_mtim.tv_sec)
            #endif
            found.append((path, UInt64(max(0, info.st_size)), modified))
        }
        var victims: [(String, (@Sendable () -> Void)?)] = []
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
    func sweepUntilCancelled(adopting root: String? = nil) async {
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
    private func take(_ victims: [String], from state: inout State) -> [(String, (@Sendable () -> Void)?)] {
        victims.compactMap { path in
            let stop = state.stops.removeValue(forKey: path)
            return stop == nil && state.claimed.contains(path) ? nil : (path, stop)
        }
    }

    /// Deletes partials the quota gave up, stopping the transfers that were writing them.
    private func delete(_ victims: [(String, (@Sendable () -> Void)?)], why: String) {
        for (path, stop) in victims {
            NearbyLog.logger.info("deleting the partial file \(path): \(why)")
            stop?()
            unlink(path)
            prune(above: path)
        }
    }
}
