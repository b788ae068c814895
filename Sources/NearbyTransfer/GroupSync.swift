import Synchronization

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes received files durable before they get their final names, several at once (a group
/// commit): the files that finish while one sync runs wait for the next, which covers them all. A
/// file alone is `fsync`ed, as it always was; two or more on one file system are made durable by
/// one `syncfs` (Linux; elsewhere each is `fsync`ed). On a disk where a sync costs milliseconds
/// (2.5 ms measured on the lab machine's ext4), a folder of 5,000 files pays a few dozen of them,
/// not 5,000. docs/durability.md says what each step guarantees.
final class GroupSync: Sendable {
    static let shared = GroupSync()

    /// One sync at a time, on the pool of blocking work.
    private let queue = Blocking.Serial()
    private let waiting = Locked<[(descriptor: Int32, done: OneShot<Bool>)]>([])
    /// How many files each sync covered: the last batch's size (tests, logs).
    let lastBatch = Atomic(0)

    /// Waits until the data written to `descriptor` is on stable storage; false when the sync failed.
    func sync(_ descriptor: Int32) async -> Bool {
        let done = OneShot<Bool>()
        let first = waiting.withLock { waiting in
            waiting.append((descriptor, done))
            return waiting.count == 1
        }
        // The first to wait schedules a sync; those that come while it is queued or running
        // join the next batch, which the serial queue runs after it.
        if first { queue.async { [self] in drain() } }
        // The batch always settles it: a cancelled caller still learns whether its data is durable.
        return await done.waitThroughCancellation() ?? false
    }

    private func drain() {
        let batch = waiting.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
        guard !batch.isEmpty else { return }
        lastBatch.store(batch.count, ordering: .relaxed)
        let results = Self.sync(batch.map(\.descriptor))
        for (entry, synced) in zip(batch, results) { entry.done.settle(synced) }
    }

    #if os(Linux)
    /// glibc's `syncfs(2)`, which Swift's Glibc module does not show (it is a GNU extension); nil
    /// where it is missing (each file is `fsync`ed then).
    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()
    #endif

    /// Syncs every descriptor: one `fsync` for one; one `syncfs` per file system for more (Linux).
    static func sync(_ descriptors: [Int32]) -> [Bool] {
        guard descriptors.count > 1 else { return descriptors.map { fsync($0) == 0 } }
        #if os(Linux)
        var devices: [UInt64: Bool] = [:]
        return descriptors.map { descriptor in
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return false }
            let device = UInt64(info.st_dev)
            if let synced = devices[device] { return synced }
            let synced = (Self.syncfs?(descriptor) ?? fsync(descriptor)) == 0
            devices[device] = synced
            return synced
        }
        #else
        return descriptors.map { fsync($0) == 0 }
        #endif
    }
}
