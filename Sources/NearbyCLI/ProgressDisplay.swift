import Foundation
import NearbyCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Passes events through and, when stderr is a terminal, draws a progress bar there from the
/// `progress` events (a line per file, redrawn in place). Silent when stderr is not a terminal.
final class ProgressDisplay: EventSink {
    private let events: any EventSink
    private let enabled: Bool
    private let state = Mutex<(drawn: Bool, last: String)>((false, ""))

    init(events: any EventSink, verbose: Bool) {
        self.events = events
        enabled = isatty(STDERR_FILENO) == 1
    }

    func emit(_ body: some EventBody) {
        events.emit(body)
        if let progress = body as? Events.Progress { draw(path: progress.path, bytes: progress.bytes, total: progress.total, rate: progress.rate) }
        if body is Events.FileSent || body is Events.FileFailed { finish() }
    }

    func emitLine(_ line: String) {
        events.emitLine(line)
        guard enabled, line.hasPrefix(#"{"event":"progress""#),
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let path = object["path"] as? String, let bytes = (object["bytes"] as? NSNumber)?.uint64Value,
              let total = (object["total"] as? NSNumber)?.uint64Value, let rate = (object["rate"] as? NSNumber)?.doubleValue
        else {
            if line.hasPrefix(#"{"event":"file-sent""#) || line.hasPrefix(#"{"event":"file-failed""#) { finish() }
            return
        }
        draw(path: path, bytes: bytes, total: total, rate: rate)
    }

    private func draw(path: String, bytes: UInt64, total: UInt64, rate: Double) {
        guard enabled else { return }
        let fraction = total == 0 ? 1 : Double(bytes) / Double(total)
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let name = path.count > 28 ? "…" + path.suffix(27) : path
        let line = String(format: "\r%@ [%@] %3.0f%% %@ %@/s", name, bar, fraction * 100, Self.size(Double(bytes)), Self.size(rate))
        state.withLock { $0 = (true, line) }
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the bar's line, so what follows starts on a fresh one.
    func finish() {
        guard enabled else { return }
        let drawn = state.withLock { state -> Bool in
            defer { state.drawn = false }
            return state.drawn
        }
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func size(_ bytes: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = bytes
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }
}
