import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What this process prints, on its way out: written by a thread of its own, so a reader that is
/// slow, or stuck (`nearby advertise | sleep 300`), never holds up an event loop, and the network
/// goes on. Bounded: once more than `limits.bytes` wait, `isFull` says so, and the links in session
/// stop reading (`FrameSplitter`) until half of it is written — TCP's flow control stops their
/// peers. What cannot wait that way (a handshake's events, discovery, the node's own lines) is still
/// taken up to `limits.dropAt`; past that a line is dropped and counted, and once there is room
/// again one `suppressed` event per kind says how many (`OutputBacklog.Drops`).
///
/// Lines keep their order, across descriptors too (a progress bar on stderr between lines on a
/// terminal). Whatever waits when the process exits is written first, for as long as the reader
/// takes it (`drain`).
package final class OutputQueue: Sendable {
    package struct Limits: Sendable, Equatable {
        /// Bytes waiting beyond which links in session stop reading.
        package var bytes: Int
        /// Bytes waiting beyond which a line is dropped (and counted).
        package var dropAt: Int

        package init(bytes: Int, dropAt: Int) {
            self.bytes = max(bytes, 1)
            self.dropAt = max(dropAt, self.bytes)
        }

        /// 2 MiB (a 1 MiB message as JSON is 1.4 MB), or `NEARBY_OUTPUT_QUEUE_BYTES`; lines are
        /// dropped past four times that. Between the two: what the links that had taken their
        /// share of `MemoryBudget.frames` still complete once the queue is full, and what a peer
        /// that closes its side sent before (NIO reads a closing connection to its end at once).
        package static func standard(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Limits {
            let bytes = environment["NEARBY_OUTPUT_QUEUE_BYTES"].flatMap(Int.init).map { max($0, 1024) } ?? 2 << 20
            return Limits(bytes: bytes, dropAt: 4 * bytes)
        }
    }

    private struct State {
        var pieces: [(fd: Int32, text: String)] = []
        /// Bytes taken and not yet written (the writer's batch included).
        var queued = 0
        var writerAwake = false
        var threadStarted = false
        /// Called once `queued` is at most half of the limit, by the number `whenRoom` gave.
        var waiters: [UInt64: @Sendable () -> Void] = [:]
        var nextWaiter: UInt64 = 0
        var drops = OutputDrops()
        var written: UInt64 = 0
    }

    package let limits: Limits
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let write: @Sendable (Int32, String) -> Void
    /// How a count of dropped lines is printed (a `suppressed` event as JSON, unless set otherwise).
    /// Kept in a class, not as a closure in the mutex: a closure returned out of `withLock` was
    /// re-wrapped in a thunk each time, and each of those (32 bytes, once per write batch) leaked —
    /// heaptrack on `accept --web` under 6,000 uploads: 11,992 of them at exit.
    private final class Notice: Sendable {
        let render: @Sendable (Events.Suppressed) -> String
        init(_ render: @escaping @Sendable (Events.Suppressed) -> String) { self.render = render }
    }
    private let notice = Locked(Notice { EventEncoder().line($0) + "\n" })

    package init(limits: Limits = .standard(), write: @escaping @Sendable (Int32, String) -> Void = { writeText($0, $1) }) {
        self.limits = limits
        self.write = write
    }

    /// This process's stdout and stderr, bounded by the process's `ResourceBudget`.
    package static let standard = OutputQueue(limits: ResourceBudget.shared.limits.output)

    /// How `suppressed` notices are printed (for people, on a terminal).
    package func renderNotices(_ render: @escaping @Sendable (Events.Suppressed) -> String) {
        notice.withLock { $0 = Notice(render) }
    }

    /// Queues `text` for `fd`; never waits. Past `limits.dropAt` the line is dropped and counted.
    package func append(_ text: String, fd: Int32) {
        let size = text.utf8.count
        let signal = state.withLock { state -> Bool in
            guard state.queued + size <= limits.dropAt || state.queued == 0 else {
                state.drops.countLines(text)
                return false
            }
            state.pieces.append((fd, text))
            state.queued += size
            return startWriter(&state)
        }
        if signal { wake.signal() }
    }

    /// Counts a line of `kind` that was never made because the node had no room for it (a message
    /// NIO read from a link whose reads were held, once its peer closed: `FrameSplitter`). It is
    /// reported as a dropped line is: in one `suppressed` event, at once when there is room.
    package func dropped(kind: String) {
        let render = notice.withLock { $0 }.render
        let signal = state.withLock { state -> Bool in
            state.drops.count(kind: kind)
            guard state.queued <= limits.bytes / 2 else { return false }
            Self.queueSummaries(&state, render)
            return startWriter(&state)
        }
        if signal { wake.signal() }
    }

    /// Whether more than `limits.bytes` wait: links in session should not read now.
    package var isFull: Bool { state.withLock { $0.queued > limits.bytes } }

    /// Bytes waiting now.
    package var queued: Int { state.withLock { $0.queued } }

    /// Calls `resume` (on any thread) once at most half the limit waits; at once when it already is
    /// (then nil). Else returns a number for `forget`: a link that closes meanwhile leaves nothing
    /// behind, however long the reader takes.
    @discardableResult
    package func whenRoom(_ resume: @escaping @Sendable () -> Void) -> UInt64? {
        let waiter = state.withLock { state -> UInt64? in
            guard state.queued > limits.bytes / 2 else { return nil }
            state.nextWaiter += 1
            state.waiters[state.nextWaiter] = resume
            return state.nextWaiter
        }
        if waiter == nil { resume() }
        return waiter
    }

    /// The waiter `whenRoom` numbered is no longer interested.
    package func forget(_ waiter: UInt64) {
        state.withLock { _ = $0.waiters.removeValue(forKey: waiter) }
    }

    /// Waiters now (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits until everything queued is written, or until the reader took nothing for `stall`.
    package func drain(stall: Duration = .seconds(5)) {
        var last = state.withLock { $0.written }
        var since = ContinuousClock.now
        while true {
            let (queued, written) = state.withLock { ($0.queued, $0.written) }
            if queued == 0 { return }
            if written != last {
                last = written
                since = .now
            } else if ContinuousClock.now - since > stall {
                return
            }
            usleep(1000)
        }
    }

    /// Marks the writer awake; true when it must be woken. Starts its thread the first time.
    private func startWriter(_ state: inout State) -> Bool {
        if !state.threadStarted {
            state.threadStarted = true
            let thread = Thread { [self] in self.run() }
            thread.name = "nearby-output"
            thread.start()
            OutputQueue.registerForExit(self)
        }
        guard !state.writerAwake else { return false }
        state.writerAwake = true
        return true
    }

    /// The writer thread: takes everything waiting, writes it (one `write(2)` per run of one
    /// descriptor), counts it written, and wakes whoever waited for room.
    private func run() {
        while true {
            wake.wait()
            while let batch = take() {
                var index = batch.startIndex
                var bytes = 0
                while index < batch.endIndex {
                    let fd = batch[index].fd
                    var joined = ""
                    while index < batch.endIndex, batch[index].fd == fd {
                        joined += batch[index].text
                        index += 1
                    }
                    bytes += joined.utf8.count
                    write(fd, joined)
                }
                written(bytes)
            }
        }
    }

    /// Everything waiting, or nil (the writer then sleeps) when nothing does.
    private func take() -> [(fd: Int32, text: String)]? {
        state.withLock { state in
            guard !state.pieces.isEmpty else {
                state.writerAwake = false
                return nil
            }
            return Swift.exchange(&state.pieces, with: [])
        }
    }

    private func written(_ bytes: Int) {
        let render = notice.withLock { $0 }.render
        let waiters = state.withLock { state -> [UInt64: @Sendable () -> Void] in
            state.queued -= bytes
            state.written += UInt64(bytes)
            // Room again: first say what was dropped, in the order of the lines that follow.
            if state.queued <= limits.bytes / 2 { Self.queueSummaries(&state, render) }
            guard state.queued <= limits.bytes / 2 else { return [:] }
            return Swift.exchange(&state.waiters, with: [:])
        }
        // In the order they came.
        for key in waiters.keys.sorted() { waiters[key]?() }
    }

    /// Queues one `suppressed` line per kind dropped so far, and empties the count.
    private static func queueSummaries(_ state: inout State, _ render: (Events.Suppressed) -> String) {
        for summary in state.drops.take(now: .now) {
            let text = render(summary)
            state.pieces.append((STDOUT_FILENO, text))
            state.queued += text.utf8.count
        }
    }

    private static let live = Locked<[OutputQueue]>([])

    private static func registerForExit(_ queue: OutputQueue) {
        let first = live.withLock { queues in
            queues.append(queue)
            return queues.count == 1
        }
        if first { atexit { OutputQueue.drainAll() } }
    }

    static func drainAll() {
        // Lines still waiting for their tick's end first.
        TickBuffer.drainAll()
        for queue in live.withLock({ $0 }) { queue.drain() }
    }
}

/// Lines an `OutputQueue` dropped, by event kind, since the first of them.
package struct OutputDrops {
    private var counts: [String: Int] = [:]
    private var order: [String] = []
    private var since: ContinuousClock.Instant?

    package init() {}

    /// Counts one dropped line, under its event's kind (`line` for text that is not an event).
    package mutating func count(_ text: String, now: ContinuousClock.Instant = .now) {
        count(kind: Self.kind(of: text), now: now)
    }

    /// Counts each line of a dropped `text` (lines joined in one tick), reading only where each
    /// starts: a dropped 1 MiB message is not split into copies to be counted (that took 44 % of
    /// the event loops while 200 flooders' closing connections were read to their end).
    package mutating func countLines(_ text: String, now: ContinuousClock.Instant = .now) {
        let bytes = text.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            if end > start { count(kind: Self.kind(of: bytes[start..<end]), now: now) }
            start = end < bytes.endIndex ? bytes.index(after: end) : end
        }
    }

    /// Counts one dropped line of `kind`.
    package mutating func count(kind: String, now: ContinuousClock.Instant = .now) {
        if counts[kind] == nil { order.append(kind) }
        counts[kind, default: 0] += 1
        if since == nil { since = now }
    }

    package var isEmpty: Bool { counts.isEmpty }

    /// One `suppressed` summary per kind, in the order they were first dropped; empties the count.
    package mutating func take(now: ContinuousClock.Instant) -> [Events.Suppressed] {
        guard let since else { return [] }
        let seconds = max(1, Int((now - since).components.seconds))
        defer { self = OutputDrops() }
        return order.map { Events.Suppressed(of: $0, code: "output-full", count: counts[$0] ?? 0, seconds: seconds) }
    }

    /// The `event` of a JSON line (it is always the first key), else `line`.
    static func kind(of text: String) -> String { kind(of: text.utf8[...]) }

    static func kind(of line: Substring.UTF8View) -> String {
        let prefix = #"{"event":""#.utf8
        guard line.starts(with: prefix) else { return "line" }
        let rest = line.dropFirst(prefix.count).prefix(40)
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return "line" }
        return String(decoding: rest[..<end], as: UTF8.self)
    }
}

/// `write(2)` until done, retrying on EINTR; gives up quietly when the reader is gone.
func writeText(_ fd: Int32, _ text: String) {
    var text = text
    text.withUTF8 { _ = writeAll(fd, UnsafeRawBufferPointer($0)) }
}
