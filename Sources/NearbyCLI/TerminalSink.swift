import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How events are printed: JSON lines for programs, or lines for people.
enum OutputStyle: String, EnumerableFlag, Sendable {
    case json, human

    static func help(for value: OutputStyle) -> ArgumentHelp? {
        switch value {
        case .json: return "Print events as JSON lines, even on a terminal (the default when output is not a terminal)."
        case .human: return "Print events as lines for people, even into a pipe (the default on a terminal)."
        }
    }

    /// --json / --human, else $NEARBY_OUTPUT (json, human or text), else whether `fd` is a terminal.
    static func resolve(_ flag: OutputStyle?, environment: [String: String], terminal: Bool) -> OutputStyle {
        if let flag { return flag }
        switch environment["NEARBY_OUTPUT"]?.lowercased() {
        case "json": return .json
        case "human", "text": return .human
        default: return terminal ? .human : .json
        }
    }

    /// A $NEARBY_OUTPUT that names no style, said rather than ignored in silence.
    static func unknownEnvironmentValue(_ environment: [String: String]) -> String? {
        guard let value = environment["NEARBY_OUTPUT"], !value.isEmpty,
              !["json", "human", "text"].contains(value.lowercased()) else { return nil }
        return value
    }
}

/// The event sink of a live command: every event (encoded here, or a line relayed from a running
/// node) goes out as JSON, or rendered by `HumanRenderer`, through the terminal writer; `progress`
/// events draw the bar on stderr when it is a terminal, and the end of a file replaces the bar with
/// a summary line.
final class TerminalSink: EventSink {
    private let writer: TerminalWriter
    private let fd: Int32
    private let human: Bool
    private let renderer: HumanRenderer
    private let encoder = EventEncoder()
    /// The node's service type, learnt from its `advertising` or `waiting` event, for the commands an invitation shows.
    private let service = Locked<String?>(nil)
    /// The invitations this command sent (`invited`), the latest few: one declined ends the
    /// command with the sentence that says so, so its `declined` line is not said before it.
    private let invited = Locked<[String]>([])

    init(writer: TerminalWriter, fd: Int32, style: OutputStyle) {
        self.writer = writer
        self.fd = fd
        human = style == .human
        renderer = HumanRenderer(color: writer.colors(fd), columns: isatty(fd) == 1 ? writer.columns : nil)
        // Lines the process's output queue had to drop are counted in a line of the same kind.
        if human, writer === TerminalWriter.live {
            let renderer = renderer
            OutputQueue.standard.renderNotices { renderer.render(DecodedEvent($0, at: Date())) + "\n" }
        }
    }

    func emit(_ body: some EventBody) {
        let now = Date()
        // Programs get the line; people get the event itself, rendered without a round trip. The
        // bar's kinds are decoded for programs only when there is a terminal to draw it on: a
        // folder of thousands of files makes three of them a file.
        guard human || (writer.stderrIsTerminal && Self.barKinds.contains(type(of: body).event)) else {
            return writer.line(encoder.line(body, at: now), fd: fd)
        }
        show(DecodedEvent(body, at: now)) { encoder.line(body, at: now) }
    }

    /// A line relayed from a running node (maybe an older one) is made as safe as our own first.
    func emitLine(_ line: String) {
        let line = TerminalText.jsonLine(line)
        // Programs get the line as it is; only the few kinds the bar needs are decoded for them.
        guard human || (writer.stderrIsTerminal && Self.barPrefixes.contains(where: line.hasPrefix)),
              let event = HumanRenderer.decode(line)
        else { return writer.line(line, fd: fd) }
        show(event) { line }
    }

    private static let barKinds: Set<String> = [
        Events.Progress.event, Events.FileSent.event, Events.FileReceived.event, Events.FileFailed.event,
        Events.Reconnecting.event,
    ]
    /// How a line of one of them starts (the envelope is always written first).
    private static let barPrefixes = barKinds.map { #"{"event":""# + $0 + #"""# }

    private func show(_ event: DecodedEvent, line: () -> String) {
        // A client of a running node learns the service from the node's `waiting` event.
        if let name = (event.body as? Events.Advertising)?.service ?? (event.body as? Events.Waiting)?.service {
            service.withLock { $0 = name }
        }
        switch event.body {
        case let sent as Events.Invited:
            invited.withLock { $0 = Array(($0 + [sent.invitation]).suffix(8)) }
            writer.line(human ? renderer.render(event, service: service.withLock { $0 }) : line(), fd: fd)
        case let declined as Events.Declined where human && invited.withLock({ $0.contains(declined.invitation) }):
            // Our invitation, declined: the command ends with the one sentence that says so (exit 3).
            return
        case let progress as Events.Progress:
            writer.drawBar(ProgressBar.text(progress, columns: writer.columns))
            // On a terminal the bar is the progress; as lines, ten a second would drown the rest.
            if !human { writer.line(line(), fd: fd) }
        case is Events.Reconnecting:
            // Where the bar was: the file waits for its link, and the next progress replaces it.
            writer.drawBar(String(HumanRenderer(color: writer.colors(STDERR_FILENO)).render(event).prefix(max(writer.columns - 1, 8))))
            if !human { writer.line(line(), fd: fd) }
        case is Events.Looking where human:
            // Words while waiting, not a result: beside the prompt, off the data.
            writer.line(HumanRenderer(color: writer.colors(STDERR_FILENO)).render(event), fd: STDERR_FILENO)
        case is Events.FileSent, is Events.FileReceived, is Events.FileFailed:
            if human {
                writer.endBar()
                writer.line(renderer.render(event), fd: fd)
            } else {
                writer.endBar(summary: HumanRenderer(color: writer.colors(STDERR_FILENO)).summary(event))
                writer.line(line(), fd: fd)
            }
        default:
            writer.line(human ? renderer.render(event, service: service.withLock { $0 }) : line(), fd: fd)
        }
    }
}

/// The one-line progress bar: `photo.jpg [#######-------]  45% 9.0 MiB 12.0 MiB/s`, never wider
/// than the terminal.
/// The bar drawn on stderr for a file in flight: how far (of its total), how fast, and when it
/// should be done; with several files, which one and where the whole batch is.
enum ProgressBar {
    static func text(_ e: Events.Progress, columns: Int) -> String {
        // No total ahead (a browser's upload): how much so far and how fast, no bar or percentage.
        if e.total == 0, e.bytes > 0 {
            let facts = " \(Format.size(Double(e.bytes), roundingDown: true)) so far, \(Format.size(e.rate))/s"
            let path = Text.clean(e.path, limit: 4096)
            let room = max(columns - 1 - facts.count, 8)
            return (path.count > room ? "…" + path.suffix(room - 1) : path) + facts
        }
        let bytes = Double(e.bytes), total = Double(e.total), rate = e.rate
        let fraction = total > 0 ? min(max(bytes / total, 0), 1) : 1
        // Rounded down until the end: never "100%" (nor the total's size) for a file not done yet.
        let done = bytes >= total
        let percent = done ? 100 : min((fraction * 100).rounded(.down), 99)
        let moved = done ? Format.size(total) : Format.size(bytes, roundingDown: true)
        var facts = String(format: " %3.0f%% %@ of %@, %@/s", percent, moved, Format.size(total), Format.size(rate))
        // No ETA (done, or not moving yet): its room kept, so the bar and what follows keep their
        // place when a file reaches 100 %.
        facts += eta(remaining: total - bytes, rate: rate).map { ", ETA " + $0 } ?? String(repeating: " ", count: Self.etaRoom)
        var prefix = ""
        if let files = e.files {
            prefix = "[\(e.file ?? 0)/\(files)] "
            let all = Double(e.allBytes ?? 0), allTotal = Double(e.allTotal ?? 0)
            let allFraction = allTotal > 0 ? min(max(all / allTotal, 0), 1) : 1
            let allPercent = all >= allTotal ? 100 : min((allFraction * 100).rounded(.down), 99)
            facts += String(format: " · all %.0f%% of %@", allPercent, Format.size(allTotal))
            if let eta = eta(remaining: allTotal - all, rate: rate) { facts += ", ETA " + eta }
        }
        // The bar takes what room is left after the facts and the name (up to 24 columns of it; on
        // a narrow terminal 12, a longer one gives way), up to 30 columns.
        let path = Text.clean(e.path, limit: 4096)
        let free = columns - 1 - prefix.count - facts.count - 3
        let roomy = free - min(max(path.count, 12), 24)
        let width = min(30, roomy >= 5 ? roomy : free - 12)
        let bar = width >= 5
            ? " [" + String(repeating: "#", count: Int(fraction * Double(width))) + String(repeating: "-", count: width - Int(fraction * Double(width))) + "]"
            : ""
        let room = max(columns - 1 - prefix.count - bar.count - facts.count, 8)
        let name = path.count > room ? "…" + path.suffix(room - 1) : path
        return String((prefix + name + bar + facts).prefix(columns - 1))
    }

    /// `, ETA 0:07`: what an ETA of under ten minutes takes.
    static let etaRoom = 10

    /// When `remaining` bytes at `rate` bytes a second will be done, as m:ss or h:mm:ss; nil when
    /// done, not moving, or further than 100 hours.
    static func eta(remaining: Double, rate: Double) -> String? {
        guard remaining > 0, rate > 0, remaining.isFinite, rate.isFinite else { return nil }
        let seconds = (remaining / rate).rounded(.up)
        guard seconds < 100 * 3600 else { return nil }
        let whole = Int(seconds)
        return whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }
}
