import Foundation
import NearbyCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one writer of what this process shows on its terminal: event lines, log lines and the
/// progress bar all pass through its lock, so the bar (on stderr) is cleared before any other line
/// reaches the terminal and drawn again after it — no line ever starts in the middle of the bar.
final class TerminalWriter: Sendable {
    package let stdoutIsTerminal: Bool
    package let stderrIsTerminal: Bool
    /// Escape sequences (colours, clearing a line) are allowed: not with `NO_COLOR`, not on `TERM=dumb`.
    package let escapes: Bool
    /// The terminal's width, for the bar (which must never wrap, or `\r` cannot take it back).
    package let columns: Int
    private let write: @Sendable (Int32, String) -> Void
    /// Event lines written on an event loop wait here for the end of its tick (one `write(2)` for a
    /// burst of messages); every other write empties it first, so nothing is reordered.
    private let batched: TickBuffer
    /// The bar as drawn now, if one is.
    private let bar = Locked<String?>(nil)

    package init(
        stdoutIsTerminal: Bool, stderrIsTerminal: Bool, environment: [String: String], columns: Int = 80,
        write: @escaping @Sendable (Int32, String) -> Void
    ) {
        self.stdoutIsTerminal = stdoutIsTerminal
        self.stderrIsTerminal = stderrIsTerminal
        escapes = Self.escapesAllowed(environment)
        self.columns = max(columns, 20)
        self.write = write
        batched = TickBuffer(write: write)
    }

    /// This process's own stdout and stderr. What goes to stdout leaves through `OutputQueue.standard`
    /// (its own thread: a reader that does not keep up never holds up the network); stderr too when
    /// stdout is a terminal, so the bar keeps its place between lines, else at once.
    package static let live = TerminalWriter(
        stdoutIsTerminal: isatty(STDOUT_FILENO) == 1, stderrIsTerminal: isatty(STDERR_FILENO) == 1,
        environment: ProcessInfo.processInfo.environment, columns: terminalColumns(),
        write: { [shared = isatty(STDOUT_FILENO) == 1] fd, text in
            if fd == STDOUT_FILENO || shared {
                OutputQueue.standard.append(text, fd: fd)
            } else {
                writeWhole(fd, text)
            }
        })

    /// https://no-color.org: set and not empty means no colour; a dumb terminal knows no escapes.
    static func escapesAllowed(_ environment: [String: String]) -> Bool {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }

    package func isTerminal(_ fd: Int32) -> Bool {
        fd == STDOUT_FILENO ? stdoutIsTerminal : fd == STDERR_FILENO ? stderrIsTerminal : false
    }

    /// Whether lines written on `fd` may be coloured.
    package func colors(_ fd: Int32) -> Bool { escapes && isTerminal(fd) }

    /// Writes one whole line on `fd`. A bar on the terminal is cleared first and drawn again after.
    package func line(_ text: String, fd: Int32) {
        bar.withLock { bar in
            let shared = bar != nil && isTerminal(fd)
            guard shared, let bar else { return batched.append(text + "\n", fd: fd) }
            batched.drain()
            write(STDERR_FILENO, clearing(bar))
            write(fd, text + "\n")
            write(STDERR_FILENO, "\r" + bar)
        }
    }

    /// A log line (already ending in a newline) on stderr, with the same care.
    package func log(_ text: String) {
        bar.withLock { bar in
            batched.drain()
            if let bar, stderrIsTerminal { write(STDERR_FILENO, clearing(bar)) }
            write(STDERR_FILENO, text)
            if let bar, stderrIsTerminal { write(STDERR_FILENO, "\r" + bar) }
        }
    }

    /// Draws (or redraws) the bar on stderr, when stderr is a terminal.
    package func drawBar(_ text: String) {
        guard stderrIsTerminal else { return }
        bar.withLock { bar in
            batched.drain()
            // A shorter bar must not leave the end of the longer one behind.
            let tail = escapes ? "\u{1b}[K" : String(repeating: " ", count: max(0, (bar?.count ?? 0) - text.count))
            write(STDERR_FILENO, "\r" + text + tail)
            bar = text
        }
    }

    /// Takes the bar away, and puts `summary` (a line for people, on stderr) in its place.
    package func endBar(summary: String? = nil) {
        bar.withLock { bar in
            batched.drain()
            if let drawn = bar { write(STDERR_FILENO, clearing(drawn)) }
            bar = nil
            if let summary, stderrIsTerminal { write(STDERR_FILENO, summary + "\n") }
        }
    }

    /// Back to the start of the bar's line, the line emptied.
    private func clearing(_ bar: String) -> String {
        escapes ? "\r\u{1b}[K" : "\r" + String(repeating: " ", count: bar.count) + "\r"
    }
}

/// `write(2)` until done, retrying on EINTR; gives up quietly when the reader is gone.
private func writeWhole(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + done }, bytes.count - done) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        done += written
    }
}

/// The size of the terminal on `fd` (columns, rows), nil when it is not one or cannot be told.
func terminalSize(_ fd: Int32) -> (columns: Int, rows: Int)? {
    var size = winsize()
    #if canImport(Glibc)
    let asked = ioctl(fd, UInt(TIOCGWINSZ), &size)
    #else
    let asked = ioctl(fd, TIOCGWINSZ, &size)
    #endif
    return asked == 0 ? (Int(size.ws_col), Int(size.ws_row)) : nil
}

/// The width of the terminal on stderr (80 when it cannot be told).
private func terminalColumns() -> Int {
    if let columns = terminalSize(STDERR_FILENO)?.columns, columns > 0 { return columns }
    if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
    return 80
}
