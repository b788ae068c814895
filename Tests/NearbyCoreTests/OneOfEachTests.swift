import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// One of each small thing, held by a test that reads every source file rather than by our words:
/// one lock box (`Locked`, and no `Mutex`), one progress pacer with the interval written in it,
/// and raw continuations in `OneShot` alone.
@Suite struct OneOfEachTests {
    struct Line {
        let file: String
        let number: Int
        let text: Substring
        var place: String { "\(file):\(number)" }
    }

    static func sourceLines() throws -> [Line] {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var lines: [Line] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                lines.append(Line(file: file.lastPathComponent, number: number + 1, text: line))
            }
        }
        return lines
    }

    static func matches(_ line: Substring, _ pattern: String) -> Bool {
        String(line).range(of: pattern, options: .regularExpression) != nil
    }

    static func isComment(_ line: Substring) -> Bool { line.drop(while: { $0 == " " }).hasPrefix("//") }

    /// A type named like a lock box (`LockedValue`, `LockedInstant`), or a `…Box` that holds a
    /// `Mutex` within its first lines (`KeyBox`): `Locked` in Locked.swift is the one.
    @Test func oneLockBox() throws {
        let lines = try Self.sourceLines()
        var offenders: [String] = []
        for (index, line) in lines.enumerated() where !Self.isComment(line.text) && line.file != "Locked.swift" {
            if Self.matches(line.text, #"\b(class|struct|enum|actor)\s+Locked\w*"#) { offenders.append(line.place) }
            if Self.matches(line.text, #"\b(class|struct|enum|actor)\s+\w*Box\b"#) {
                let body = lines[(index + 1)..<min(index + 6, lines.count)].filter { $0.file == line.file }
                if body.contains(where: { $0.text.contains("Locked<") }) { offenders.append(line.place) }
            }
            if line.text.contains("Locked<Value>") { offenders.append(line.place) }
            // Foundation's locks: a second lock box by another name (RecentPeers' RecordedKeys was one).
            if Self.matches(line.text, #"\b(NSLock|NSRecursiveLock|NSCondition|os_unfair_lock|pthread_mutex_t)\b"#) { offenders.append(line.place) }
        }
        #expect(offenders.isEmpty, "a second lock box: use Locked (NearbyBase/Support/Locked.swift): \(offenders)")
    }

    /// No `Synchronization.Mutex`: on Linux a contended one hands the lock over inside the kernel,
    /// unseen by ThreadSanitizer, which then reports every access under it as a race (each run of
    /// the unit suite found another: docs/fuzzing.md, "ThreadSanitizer"). `Locked` is a pthread
    /// mutex, which TSan knows.
    @Test func noMutexButLocked() throws {
        let offenders = try Self.sourceLines().filter { !Self.isComment($0.text) && Self.matches($0.text, #"\bMutex\s*[<(]"#) }
        #expect(offenders.isEmpty, "a Synchronization.Mutex: use Locked (NearbyBase/Support/Locked.swift): \(offenders.map(\.place))")
    }

    /// Progress is paced by `ProgressPacer` alone: no other pacer type, no interval of its own, no
    /// line that compares a time since the last progress with a literal duration.
    @Test func oneProgressPacerWithTheIntervalInIt() throws {
        var offenders: [String] = []
        for line in try Self.sourceLines() where !Self.isComment(line.text) && line.file != "ProgressPacer.swift" {
            let text = line.text
            if Self.matches(text, #"\b(class|struct|enum|actor)\s+\w*Pacer\b"#) { offenders.append(line.place) }
            if Self.matches(text, #"(?i)progress\w*Interval|interval\w*progress"#) { offenders.append(line.place) }
            if Self.matches(text, #"(?i)(progress|pacer)"#), Self.matches(text, #"(>=|<=| < | > )"#),
               Self.matches(text, #"\.(milli|micro|nano)?seconds\(\d"#) {
                offenders.append(line.place)
            }
        }
        #expect(offenders.isEmpty, "progress is paced by ProgressPacer (NearbyTransfer/ProgressPacer.swift): \(offenders)")
    }

    /// A raw continuation is written in OneShot.swift alone: every other wait is a `OneShot` (a
    /// queue of waiters, a queue of them), which resumes exactly once and ends when its task is
    /// cancelled.
    @Test func noRawContinuationOutsideOneShot() throws {
        let raw = #"\b(with(Checked|Unsafe)(Throwing)?Continuation|(Checked|Unsafe)Continuation)\b"#
        let offenders = try Self.sourceLines()
            .filter { $0.file != "OneShot.swift" && !Self.isComment($0.text) && Self.matches($0.text, raw) }
            .map(\.place)
        #expect(offenders.isEmpty, "wait on a OneShot (NearbyBase/Support/OneShot.swift), not a raw continuation: \(offenders)")
    }

    /// The pacer says the first event at once (or an interval after the start it was given), then at
    /// most one an interval, and the last always.
    /// One HTTP dialect (issue 62): an answer's head is written by `HTTPAnswer.write` (and the
    /// layer's own 100 Continue and 400, and `WebReply.start`'s streamed head); a refusal's status
    /// for an upload comes from `HTTPAnswer.status(refusing:)`, never from a code's string.
    @Test func oneAnswerWriterAndOneStatusMap() throws {
        let writers: Set<String> = ["HTTPAnswer.swift", "HTTPServer.swift", "HTTPIntake.swift", "WebReply.swift"]
        var offenders: [String] = []
        for line in try Self.sourceLines() where !Self.isComment(line.text) {
            if line.text.contains("HTTPResponseHead("), !writers.contains(line.file) { offenders.append(line.place) }
            if line.file != "HTTPAnswer.swift", Self.matches(line.text, #"\.(serviceUnavailable|insufficientStorage)\b"#) { offenders.append(line.place) }
            if Self.matches(line.text, #"error\.code == ""#) { offenders.append(line.place) }
        }
        #expect(offenders.isEmpty, "a second HTTP dialect: write answers with HTTPAnswer.write, map refusals with HTTPAnswer.status(refusing:), decide by TransferCode: \(offenders)")
    }

    @Test func thePacerSaysAtMostOneAnIntervalAndAlwaysTheLast() {
        let start = ContinuousClock.now
        let half = start + ProgressPacer.interval / 2
        var fresh = ProgressPacer()
        let said = [fresh.due(at: start), fresh.due(at: half), fresh.due(final: true, at: half), fresh.due(at: start + ProgressPacer.interval * 2)]
        #expect(said == [true, false, true, true])
        var started = ProgressPacer(since: start)
        let later = [started.due(at: half), started.due(at: start + ProgressPacer.interval)]
        #expect(later == [false, true])
    }
}
