import Foundation
import Logging
import Synchronization

/// Logging through swift-log, to stderr, in words for people: `nearby: error: …` always,
/// `nearby: [info] …` and below only when asked for (`--verbose`, or `NEARBY_LOG_LEVEL=debug|trace`).
/// stdout stays pure JSON lines.
package enum NearbyLog {
    private static let bootstrapped = Locked(false)

    /// Sets up swift-log once per process; later calls only change the level.
    package static func bootstrap(verbose: Bool, environment: [String: String]) {
        let fromEnvironment = environment["NEARBY_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
        let level = fromEnvironment ?? (verbose ? .info : .warning)
        StderrLogHandler.level.withLock { $0 = level }
        let first = bootstrapped.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { LoggingSystem.bootstrap { StderrLogHandler(label: $0) } }
    }

    package static let logger = Logger(label: "nearby")

    /// Where log lines go instead of straight to stderr: the CLI's terminal writer, which clears a
    /// progress bar before a line and draws it again after. Each call gets one whole line.
    package static func route(_ write: @escaping @Sendable (String) -> Void) {
        output.withLock { $0 = Route(write: write) }
    }

    /// The closure in a box: a closure kept in a `Mutex` directly is re-wrapped in two conversion
    /// thunks at every `withLock`, so each call would get slower than the one before.
    final class Route: Sendable {
        let write: @Sendable (String) -> Void
        init(write: @escaping @Sendable (String) -> Void) { self.write = write }
    }

    static let output = Locked<Route?>(nil)

    /// The metadata key of a line's terminal width (`Console.error(_:columns:)`): an error
    /// sentence for a terminal is wrapped to it between words, never cut.
    static let columnsKey = "columns"
}

struct StderrLogHandler: LogHandler {
    static let level = Locked(Logger.Level.warning)
    let label: String
    var metadata: Logger.Metadata = [:]

    var logLevel: Logger.Level {
        get { Self.level.withLock { $0 } }
        set { Self.level.withLock { $0 = newValue } }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// One line on stderr: the message made safe for a terminal (`TerminalText`: peers' names,
    /// reasons and IDs are in it), and, below `error`, summarised when one place in the code
    /// repeats itself (`NearbyLog.repeats`). Errors are never held back.
    func log(event: LogEvent) {
        let message = event.message.description
        if event.level < .error {
            let site = "\(event.file):\(event.line)"
            guard NearbyLog.repeats.admit(site) else {
                NearbyLog.examples.withLock { $0[site] = (event.level, message) }
                return
            }
        }
        let columns = event.metadata?[NearbyLog.columnsKey].flatMap { Int("\($0)") }
        NearbyLog.write(Self.line(event.level, message, columns: columns))
    }

    /// `nearby: error: …` (or `warning:`, `[info]` …) and the message, safe for a terminal.
    /// On a terminal (`columns`), an error is wrapped to its width between words.
    static func line(_ level: Logger.Level, _ message: String, columns: Int? = nil) -> String {
        let prefix = switch level {
        case .error, .critical: "nearby: error: "
        case .warning: "nearby: warning: "
        default: "nearby: [\(level)] "
        }
        let text = TerminalText.escaped(message)
        guard level >= .error else { return prefix + text + "\n" }
        return prefix + TerminalText.wrapped(text, first: prefix.count, indent: 2, columns: columns) + "\n"
    }
}

extension NearbyLog {
    /// Log lines from one place in the code (a datagram dropped, a stranger's link closed): at most
    /// 5 in 10 s, then one line with how many more there were and the last of them.
    static let repeats = TimedRepeatLimiter<String> { summary in
        let (level, example) = examples.withLock { $0.removeValue(forKey: summary.key) } ?? (.info, "")
        write(StderrLogHandler.line(level, summaryText(summary, example: example)))
    }

    /// `… and 19,873 more like "dropped a datagram (replayed)" in the last 10 s`: the last one held back.
    static func summaryText(_ summary: RepeatLimiter<String>.Summary, example: String) -> String {
        let cut = example.count > 160 ? example.prefix(160) + "…" : Substring(example)
        return "… and \(RepeatLimiter<String>.grouped(summary.count)) more like \"\(cut)\" in the last \(summary.seconds) s"
    }

    /// Writes the summaries of log lines still held back: the node is stopping.
    package static func drainRepeats() { repeats.drain() }

    /// The last line held back from each place, with its level, for its summary.
    static let examples = Locked<[String: (Logger.Level, String)]>([:])

    static func write(_ line: String) {
        if let routed = output.withLock({ $0 }) {
            routed.write(line)
        } else {
            writeFully(STDERR_FILENO, Array(line.utf8))
        }
    }
}
