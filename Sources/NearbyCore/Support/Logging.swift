import Foundation
import Logging
import Synchronization

/// Logging through swift-log, to stderr, in words for people: `nearby: error: …` always,
/// `nearby: [info] …` and below only when asked for (`--verbose`, or `NEARBY_LOG_LEVEL=debug|trace`).
/// stdout stays pure JSON lines.
public enum NearbyLog {
    private static let bootstrapped = Mutex(false)

    /// Sets up swift-log once per process; later calls only change the level.
    public static func bootstrap(verbose: Bool, environment: [String: String]) {
        let fromEnvironment = environment["NEARBY_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
        let level = fromEnvironment ?? (verbose ? .info : .warning)
        StderrLogHandler.level.withLock { $0 = level }
        let first = bootstrapped.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { LoggingSystem.bootstrap { StderrLogHandler(label: $0) } }
    }

    public static let logger = Logger(label: "nearby")

    /// Where log lines go instead of straight to stderr: the CLI's terminal writer, which clears a
    /// progress bar before a line and draws it again after. Each call gets one whole line.
    public static func route(_ write: @escaping @Sendable (String) -> Void) {
        output.withLock { $0 = Route(write: write) }
    }

    /// The closure in a box: a closure kept in a `Mutex` directly is re-wrapped in two conversion
    /// thunks at every `withLock`, so each call would get slower than the one before.
    final class Route: Sendable {
        let write: @Sendable (String) -> Void
        init(write: @escaping @Sendable (String) -> Void) { self.write = write }
    }

    static let output = Mutex<Route?>(nil)
}

struct StderrLogHandler: LogHandler {
    static let level = Mutex(Logger.Level.warning)
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

    func log(event: LogEvent) {
        let prefix: String
        switch event.level {
        case .error, .critical: prefix = "nearby: error: "
        case .warning: prefix = "nearby: warning: "
        default: prefix = "nearby: [\(event.level)] "
        }
        let line = prefix + event.message.description + "\n"
        if let routed = NearbyLog.output.withLock({ $0 }) {
            routed.write(line)
        } else {
            writeFully(STDERR_FILENO, Array(line.utf8))
        }
    }
}
