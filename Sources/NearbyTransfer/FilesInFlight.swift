import NearbyBase
import NearbyWire

/// How many files of one `send-file` go at once on one session, as a pure value: small files travel
/// many at a time, each on a channel of its own, so that a 4 KiB file costs its bytes and not a
/// round trip (its offer, then its confirmation) of its own; a big file goes alone, as it always
/// did. A file may be offered while fewer than `files` are in flight and their bytes, with its own,
/// stay within `bytes` — or whenever nothing is in flight, whatever its size. Of the files in
/// flight, at most `started` send their bytes at once (`StartPermits`): the others' offers are
/// answered meanwhile, so that the next file's round trip is over before a place is free for it.
package struct FilesInFlight: Sendable, Equatable {
    package struct Limits: Sendable, Equatable {
        /// Files in flight at once (offered and not yet confirmed): half the session's 64 channels.
        package var files: Int
        /// Files sending at once: as many as a receiver keeps open for a peer it does not know
        /// (`ResourceBudget.Limits.strangerFilesPerLink`, 16: a file holds a descriptor there from
        /// its start until it is in place). Never more than `files`.
        package var started: Int
        /// Bytes of the files in flight together: one channel's window, so that a folder of big
        /// files never has the receiver hold more than one big file does.
        package var bytes: UInt64

        package init(files: Int = 32, started: Int = 16, bytes: UInt64 = UInt64(ChannelMux.defaultWindow)) {
            self.files = max(1, files)
            self.started = max(1, min(started, self.files))
            self.bytes = bytes
        }
    }

    package let limits: Limits
    package private(set) var files = 0
    package private(set) var bytes: UInt64 = 0

    package init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether a file of `size` bytes may be offered now.
    package func admits(_ size: UInt64) -> Bool {
        files == 0 || (files < limits.files && bytes + size <= limits.bytes)
    }

    /// A file of `size` bytes was offered.
    package mutating func started(_ size: UInt64) {
        files += 1
        bytes += size
    }

    /// A file of `size` bytes ended (sent, refused or failed).
    package mutating func ended(_ size: UInt64) {
        files = max(0, files - 1)
        bytes -= min(bytes, size)
    }
}

/// The places of files that send their bytes at once (`FilesInFlight.Limits.started`): a file takes
/// one when the receiver has accepted it, before its first byte, and gives it back when it ends —
/// once the receiver confirmed it, which it does after closing the file, so that the receiver
/// never holds more files open for this sender than there are places. Waiters are served in
/// order; a cancelled one stops waiting (and takes nothing).
package final class StartPermits: Sendable {
    private struct State {
        var available: Int
        var next: UInt64 = 0
        var waiting: [(id: UInt64, count: Int, ready: OneShot<Bool>)] = []

        /// The waiters the free places now serve, first come first served (a waiter for several
        /// is never passed by later ones for fewer).
        mutating func served() -> [(count: Int, ready: OneShot<Bool>)] {
            var ready: [(count: Int, ready: OneShot<Bool>)] = []
            while let first = waiting.first, first.count <= available {
                available -= first.count
                let served = waiting.removeFirst()
                ready.append((served.count, served.ready))
            }
            return ready
        }
    }

    private let state: Locked<State>
    /// The places there are in all: a take of more waits for as many.
    package let capacity: Int

    package init(_ count: Int) {
        capacity = max(1, count)
        state = Locked(State(available: capacity))
    }

    /// Places free now, and tasks waiting for one (tests).
    package var available: Int { state.withLock { $0.available } }
    package var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Takes `count` places at once (at most `capacity`), waiting for them; false (nothing taken)
    /// when the calling task is cancelled. Several at once, never one by one: two takers of several
    /// could each hold part of what the other waits for.
    package func take(_ count: Int = 1) async -> Bool {
        let count = min(max(1, count), capacity)
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        let ready = OneShot<Bool>()
        let now = state.withLock { state -> Bool? in
            if Task.isCancelled { return false }
            guard state.waiting.isEmpty, state.available >= count else {
                state.waiting.append((id, count, ready))
                return nil
            }
            state.available -= count
            return true
        }
        if let now { return now }
        if let taken = await ready.wait() { return taken }
        // Cancelled: no longer waiting, and the first waiter gone may let the next ones through.
        hand(state.withLock { state in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return [] }
            state.waiting.remove(at: index)
            return state.served()
        })
        return false
    }

    /// Wakes the waiters served; the places of one that was cancelled meanwhile come back.
    private func hand(_ served: [(count: Int, ready: OneShot<Bool>)]) {
        let back = served.reduce(0) { back, waiter in waiter.ready.settle(true) ? back : back + waiter.count }
        if back > 0 { release(back) }
    }

    /// Gives `count` places back: to the waiters in order, else to the free ones.
    package func release(_ count: Int = 1) {
        let served = state.withLock { state in
            state.available += count
            return state.served()
        }
        hand(served)
    }
}
