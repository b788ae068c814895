import Foundation

#if os(Linux)
import CMalloc
#endif

/// Bytes a node holds for its peers, against one limit per node: a link takes its share before it
/// holds the bytes and gives it back when it no longer does (or when it closes). A link that
/// cannot take its share now waits, first come first served, with its reads held — TCP's flow
/// control stops its peer meanwhile. A share is taken whole, before the bytes come, so the links
/// that got theirs can always finish, and the ones that wait hold nothing: no deadlock, whatever
/// the peers do.
///
/// The process's `ResourceBudget` owns two (docs/security.md, "One budget"): `frames`, for a frame
/// held whole while it arrives or waits for the node (a message of up to 1 MiB), and `bulkReads`,
/// for the big read buffers a link carrying a file or a stream reads with (the others read with
/// small ones).
package final class MemoryBudget: Sendable {
    /// A share asked for: granted now, or later (`onGrant`), or given up before.
    package final class Share: Sendable {
        package let bytes: Int
        fileprivate let state = Locked<Phase>(.waiting)
        fileprivate let onGrant: @Sendable () -> Void

        fileprivate enum Phase { case waiting, granted, released }

        fileprivate init(bytes: Int, onGrant: @escaping @Sendable () -> Void) {
            self.bytes = bytes
            self.onGrant = onGrant
        }

        package var isGranted: Bool { state.withLock { $0 == .granted } }
    }

    private struct State {
        var used = 0
        var waiting: [Share] = []
    }

    package let limit: Int
    private let state = Locked(State())

    package init(limit: Int) { self.limit = max(limit, 1) }

    /// Bytes granted now.
    package var used: Int { state.withLock { $0.used } }
    /// Shares waiting now.
    package var waiting: Int { state.withLock { $0.waiting.count } }

    /// Takes `bytes` now if they fit, else nil (no waiting).
    package func tryTake(_ bytes: Int) -> Share? {
        let share = Share(bytes: bytes, onGrant: {})
        return state.withLock { state -> Share? in
            // Nobody jumps the queue: with shares waiting, a new one waits too (here: refused).
            guard state.waiting.isEmpty, state.used + bytes <= limit else { return nil }
            state.used += bytes
            share.state.withLock { $0 = .granted }
            return share
        }
    }

    /// Charges `bytes` already held (a frame that went up, `WaitingFrames`): granted whatever is
    /// used, so that the shares asked for after it wait until it is given back.
    package func charge(_ bytes: Int) -> Share {
        let share = Share(bytes: bytes, onGrant: {})
        state.withLock { state in
            state.used += bytes
            share.state.withLock { $0 = .granted }
        }
        return share
    }

    /// Asks for `bytes`: granted at once (the share says so), or once enough is given back, in the
    /// order asked, and then `onGrant` is called (on the thread that gave back). A share larger than
    /// the whole limit is granted when nothing else is held.
    package func take(_ bytes: Int, onGrant: @escaping @Sendable () -> Void) -> Share {
        let share = Share(bytes: bytes, onGrant: onGrant)
        state.withLock { state in
            if state.waiting.isEmpty, fits(bytes, state.used) {
                state.used += bytes
                share.state.withLock { $0 = .granted }
            } else {
                state.waiting.append(share)
            }
        }
        return share
    }

    /// Gives back a share (granted or still waiting); a share given back twice counts once.
    package func give(_ share: Share) {
        let granted = state.withLock { state -> [Share] in
            let was = share.state.withLock { phase -> Share.Phase in
                defer { phase = .released }
                return phase
            }
            switch was {
            case .released: return []
            case .waiting:
                state.waiting.removeAll { $0 === share }
            case .granted:
                state.used -= share.bytes
            }
            var granted: [Share] = []
            while let next = state.waiting.first, fits(next.bytes, state.used) {
                state.waiting.removeFirst()
                state.used += next.bytes
                next.state.withLock { $0 = .granted }
                granted.append(next)
            }
            return granted
        }
        for share in granted { share.onGrant() }
    }

    private func fits(_ bytes: Int, _ used: Int) -> Bool { used + bytes <= limit || used == 0 }

    /// Frames held whole while they arrive or wait for the node, over every link: the process's
    /// `ResourceBudget` owns it (4 MiB, `NEARBY_FRAME_BUDGET_BYTES`). Each becomes a line of
    /// output: the more at once, the more the output queue takes past its limit when it fills.
    package static var frames: MemoryBudget { ResourceBudget.shared.frames }

    /// The big read buffers of links carrying files or streams (`ResourceBudget`; 16 MiB, that is
    /// 8 links reading 2 × 512 KiB at a time with room for TLS's buffer of as much,
    /// `NEARBY_BULK_READ_BUDGET_BYTES`).
    package static var bulkReads: MemoryBudget { ResourceBudget.shared.bulkReads }

    /// Blocks over 1 MiB (a 1 MiB message, its event line, the buffer that gathered it) are mapped
    /// on their own and given back to the system when freed. glibc's default raises that threshold
    /// to the size of any such block freed (up to 32 MiB), after which they come from the heap and
    /// its holes: RSS that stayed up after a flood of 1 MiB messages. Setting it fixes it
    /// (`mallopt(3)`); 1 MiB leaves the buffers of a bulk transfer (256 KiB reads, pooled copies),
    /// which are reused, on the heap. `NEARBY_MMAP_THRESHOLD_BYTES` sets another (0: glibc's own).
    ///
    /// Setting it also freezes the trim threshold at glibc's 128 KiB (its sliding rule would make it
    /// twice the mmap threshold): every 256 KiB chunk freed at the top of a heap went back to the
    /// system and the next one faulted its pages in again (`exc_page_fault`, 5–7 % of a streaming
    /// sender's profile, ab.sh's "stream through a node" at 0.94). So the top of a heap is kept up to
    /// `trimThreshold` (`NEARBY_TRIM_THRESHOLD_BYTES`): memory a bulk transfer reuses, not a peak.
    package static func returnBigBlocks() {
        #if os(Linux)
        let threshold = setting("NEARBY_MMAP_THRESHOLD_BYTES", 1 << 20)
        guard threshold > 0 else { return }
        _ = mallopt(M_MMAP_THRESHOLD, Int32(clamping: threshold))
        _ = mallopt(M_TRIM_THRESHOLD, Int32(clamping: setting("NEARBY_TRIM_THRESHOLD_BYTES", trimThreshold)))
        #endif
    }

    /// Gives what every arena holds free back to the system (`malloc_trim(3)`), at most once a
    /// second however often it is asked: glibc keeps what many connections freed in its arenas
    /// (64 unread HTTP pipelines: 46 -> 89 MB, still 89 MB 40 s after they ended).
    package static func giveBackFreedMemory() {
        #if os(Linux)
        let now = ContinuousClock.now
        guard lastGivenBack.withLock({ last in
            guard now - last > .seconds(1) else { return false }
            last = now
            return true
        }) else { return }
        _ = malloc_trim(0)
        #endif
    }

    private static let lastGivenBack = Locked(ContinuousClock.now - .seconds(2))

    /// What the top of a heap may keep free before it is given back: 8 MiB, a bulk transfer's
    /// chunks in flight (read ahead, queued, encrypted) with room to spare.
    static let trimThreshold = 8 << 20

    static func setting(_ name: String, _ standard: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max($0, 0) } ?? standard
    }
}
