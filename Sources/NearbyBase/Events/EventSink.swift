import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where events go. Commands and the core emit through this, so tests can capture them.
package protocol EventSink: Sendable {
    func emit(_ body: some EventBody)
    /// An event line already encoded elsewhere (a node's answer to a client), passed on as is.
    func emitLine(_ line: String)
}

/// Writes each event as one line on a file descriptor (stdout by default). Lines never interleave;
/// lines emitted on an event loop in one tick go together (`TickBuffer`) to `OutputQueue.standard`,
/// whose thread writes them, so a pipe's reader sees every line as soon as the tick that made it
/// ends, and a reader that does not read holds up no event loop.
package final class LineSink: EventSink {
    private let fd: Int32
    private let encoder = EventEncoder()
    private let output = TickBuffer { fd, text in OutputQueue.standard.append(text, fd: fd) }

    package init(fileDescriptor: Int32 = STDOUT_FILENO) { fd = fileDescriptor }

    package func emit(_ body: some EventBody) { output.append(encoder.line(body) + "\n", fd: fd) }

    /// A line from elsewhere (a running node, maybe an older one) is made as safe as our own.
    package func emitLine(_ line: String) { output.append(TerminalText.jsonLine(line) + "\n", fd: fd) }
}

/// Keeps events in memory: for tests.
final class MemorySink: EventSink {
    private let storage = Locked<[String]>([])
    private let encoder = EventEncoder()
    package init() {}
    package func emit(_ body: some EventBody) { emitLine(encoder.line(body)) }
    package func emitLine(_ line: String) { storage.withLock { $0.append(line) } }
    package var lines: [String] { storage.withLock { $0 } }
}

/// Sends every event to two sinks: the node's own output and the client that asked for the work.
package struct TeeSink: EventSink {
    let first: any EventSink
    let second: any EventSink
    package init(_ first: any EventSink, _ second: any EventSink) {
        self.first = first
        self.second = second
    }
    package func emit(_ body: some EventBody) {
        first.emit(body)
        second.emit(body)
    }
    package func emitLine(_ line: String) {
        first.emitLine(line)
        second.emitLine(line)
    }
}

/// Discards events.
package struct NullSink: EventSink {
    package init() {}
    package func emit(_ body: some EventBody) {}
    package func emitLine(_ line: String) {}
}

/// Words for people on stderr, through swift-log: errors always, chatter only with `--verbose`.
package struct Console: Sendable {
    package init(verbose: Bool) {}

    /// The caller's place is the log line's (its repeats are counted per place: `NearbyLog.repeats`).
    package func info(_ message: @autoclosure () -> String, file: String = #fileID, line: UInt = #line) {
        NearbyLog.logger.info("\(message())", file: file, function: "", line: line)
    }

    /// `columns`: stderr is a terminal this wide; the sentence is wrapped to it between words.
    package func error(_ message: String, columns: Int? = nil) {
        let metadata: Logger.Metadata? = columns.map { [NearbyLog.columnsKey: .string(String($0))] }
        NearbyLog.logger.error("\(message)", metadata: metadata)
    }
}

/// `write(2)` until done; gives up quietly when the reader is gone (EPIPE), retries on EINTR.
func writeFully(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { writeAll(fd, $0) }
}

/// `write(2)` until everything is written, retrying on EINTR. Returns 0, or the errno that stopped it.
package func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    var done = 0
    while done < bytes.count {
        let written = write(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done)
        if written < 0 {
            if errno == EINTR { continue }
            return errno
        }
        done += written
    }
    return 0
}
