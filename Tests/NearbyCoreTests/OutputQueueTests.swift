import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase

/// The output queue without a terminal: a writer that can be held (a reader that does not read),
/// lines that never wait, room reported once half is written, drops counted and reported.
@Suite struct OutputQueueTests {
    /// A reader that takes nothing until `open()`, and records what it took.
    final class Reader: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let opened = Flag()
        /// Set once the writer has called `write` (and waits in it while the reader is closed).
        let entered = Flag()
        let writes = Locked<[(Int32, String)]>([])

        func write(_ fd: Int32, _ text: String) {
            entered.set()
            if !opened.isSet {
                gate.wait()
                gate.signal()
            }
            writes.withLock { $0.append((fd, text)) }
        }

        func open() {
            opened.set()
            gate.signal()
        }

        var text: String { writes.withLock { $0.map(\.1).joined() } }
    }

    private func until(_ condition: () -> Bool) {
        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while !condition(), ContinuousClock.now < deadline { usleep(1000) }
    }

    @Test func aStuckReaderNeverMakesAnAppendWaitAndTheQueueSaysItIsFull() {
        let reader = Reader()
        let queue = OutputQueue(limits: .init(bytes: 100, dropAt: 10_000)) { reader.write($0, $1) }
        #expect(!queue.isFull)
        for index in 0..<20 { queue.append("line \(index) of twenty\n", fd: 1) }
        #expect(queue.isFull, "more than 100 bytes wait")
        let room = Flag()
        queue.whenRoom { room.set() }
        #expect(!room.isSet)
        reader.open()
        until { room.isSet }
        #expect(room.isSet, "room is reported once the reader takes the lines")
        until { queue.queued == 0 }
        #expect(!queue.isFull)
        #expect(reader.text == (0..<20).map { "line \($0) of twenty\n" }.joined(), "every line, in order")
    }

    @Test func whenThereIsRoomAlreadyTheCallIsAtOnce() {
        let queue = OutputQueue(limits: .init(bytes: 100, dropAt: 400)) { _, _ in }
        let called = Flag()
        queue.whenRoom { called.set() }
        #expect(called.isSet)
    }

    @Test func pastTheDropLimitLinesAreCountedAndReportedOnceThereIsRoom() throws {
        let reader = Reader()
        let queue = OutputQueue(limits: .init(bytes: 100, dropAt: 300)) { reader.write($0, $1) }
        let line = #"{"event":"found","time":"2026-11-24T00:00:00.000Z","peer":"x"}"# + "\n"
        for _ in 0..<20 { queue.append(line, fd: 1) }
        queue.append(#"{"event":"rejected","time":"2026-11-24T00:00:00.000Z","address":"10.0.0.1:1"}"# + "\n", fd: 1)
        #expect(queue.queued <= 300, "what waits stays under the drop limit")
        reader.open()
        until { queue.queued == 0 && reader.text.contains("suppressed") }
        let lines = reader.text.split(separator: "\n")
        let kept = lines.filter { $0.contains(#""event":"found""#) }.count
        let notices = lines.filter { $0.hasPrefix(#"{"event":"suppressed""#) }
        #expect(notices.count == 2, "one notice per kind: \(notices)")
        let found = try #require(notices.first.map { Data($0.utf8) })
        let decoded = try JSONSerialization.jsonObject(with: found) as? [String: Any]
        #expect(decoded?["of"] as? String == "found")
        #expect(decoded?["code"] as? String == "output-full")
        #expect(decoded?["count"] as? Int == 20 - kept, "every dropped line counted")
        #expect(notices.last?.contains(#""of":"rejected""#) == true)
    }

    /// Lines joined in one tick and dropped together are each counted, under its own kind.
    @Test func droppedJoinedLinesAreCountedEachByItsKind() {
        var drops = OutputDrops()
        let big = String(repeating: "x", count: 1 << 20)
        drops.countLines(#"{"event":"message","text":"\#(big)"}"# + "\n" + #"{"event":"found","peer":"a"}"# + "\n\nplain\n")
        let summaries = drops.take(now: .now)
        #expect(summaries.map(\.of) == ["message", "found", "line"])
        #expect(summaries.map(\.count) == [1, 1, 1])
    }

    @Test func ordersAcrossDescriptorsAreKept() {
        // The writer joins what waits when it takes a batch: line 0 held in a closed reader, the
        // other 99 are one batch, whatever the machine's load (a batch boundary may split a run).
        let reader = Reader()
        let queue = OutputQueue(limits: .init(bytes: 1 << 20, dropAt: 1 << 22)) { reader.write($0, $1) }
        queue.append("0\n", fd: 2)
        until { reader.entered.isSet }
        for index in 1..<100 { queue.append("\(index)\n", fd: index % 3 == 0 ? 2 : 1) }
        reader.open()
        until { queue.queued == 0 }
        #expect(reader.text == (0..<100).map { "\($0)\n" }.joined())
        let descriptors = reader.writes.withLock { $0.map(\.0) }
        #expect(zip(descriptors, descriptors.dropFirst()).allSatisfy { $0 != $1 }, "runs of one descriptor are joined")
    }

    @Test func theKindOfALineIsItsEvent() {
        #expect(OutputDrops.kind(of: #"{"event":"message","time":"t"}"#) == "message")
        #expect(OutputDrops.kind(of: "12:00 alice: hello") == "line")
    }

    @Test func limitsComeFromTheEnvironment() {
        #expect(OutputQueue.Limits.standard([:]) == .init(bytes: 2 << 20, dropAt: 8 << 20))
        #expect(OutputQueue.Limits.standard(["NEARBY_OUTPUT_QUEUE_BYTES": "65536"]) == .init(bytes: 65536, dropAt: 262_144))
    }
}

/// A flag set from any thread.
final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// The node's memory budget: shares taken whole, in order, given back once.
@Suite struct MemoryBudgetTests {
    @Test func sharesAreGrantedWhileTheyFitThenInTheOrderAsked() {
        let budget = MemoryBudget(limit: 100)
        let granted = Locked<[Int]>([])
        let first = budget.take(60) { granted.withLock { $0.append(1) } }
        #expect(first.isGranted)
        let second = budget.take(60) { granted.withLock { $0.append(2) } }
        let third = budget.take(10) { granted.withLock { $0.append(3) } }
        #expect(!second.isGranted && !third.isGranted, "the small one does not jump the queue")
        #expect(budget.used == 60 && budget.waiting == 2)
        budget.give(first)
        #expect(granted.withLock { $0 } == [2, 3])
        #expect(budget.used == 70)
        budget.give(first)
        #expect(budget.used == 70, "given back twice counts once")
        budget.give(second)
        budget.give(third)
        #expect(budget.used == 0)
    }

    @Test func aShareGivenUpWhileWaitingIsNeverGranted() {
        let budget = MemoryBudget(limit: 10)
        let held = budget.take(10) {}
        let called = Flag()
        let waiting = budget.take(5) { called.set() }
        budget.give(waiting)
        budget.give(held)
        #expect(!called.isSet)
        #expect(budget.used == 0 && budget.waiting == 0)
    }

    @Test func aShareLargerThanTheLimitWaitsUntilNothingElseIsHeld() {
        let budget = MemoryBudget(limit: 10)
        let small = budget.take(5) {}
        let big = budget.take(50) {}
        #expect(!big.isGranted)
        budget.give(small)
        #expect(big.isGranted)
        #expect(budget.tryTake(1) == nil, "nothing fits beside it")
    }
}
