import Foundation
import NearbyBase
import NearbyCore
import NearbyWatch
import Synchronization

/// Where `watch`'s events go: JSON lines through the command's sink, lines for people, or — on a
/// terminal — the live table with the latest packet lines below it (`WatchScreen`).
final class WatchPrinter: Sendable {
    private let context: CommandContext
    private let screen: WatchScreen?
    private let human: Bool
    /// `--timeout`: said in the first line, as the end of watching.
    private let timeout: Double?

    /// `live`: capturing (a file is read at once: its lines, not a table redrawn).
    init(context: CommandContext, live: Bool, timeout: Double? = nil) {
        self.context = context
        self.timeout = timeout
        human = context.humanOutput && context.terminal != nil
        screen = live && human && (context.terminal?.stdoutIsTerminal ?? false) && (context.terminal?.escapes ?? false)
            ? WatchScreen(columns: context.terminal?.columns ?? 80) : nil
    }

    /// A `watching` event as watching begins; for people, words on stderr (the table says the rest).
    func started(interface: String?, file: String?) {
        guard human else { return context.events.emit(Events.Watching(interface: interface, file: file)) }
        guard screen == nil, let terminal = context.terminal, terminal.stderrIsTerminal else { return }
        let what = file.map { "reading \($0)" } ?? "watching mDNS on \(interface ?? "every interface")"
        terminal.line(what + (file == nil ? " — " + WaitEnds.words(timeout) : ""), fd: STDERR_FILENO)
    }

    func print(_ outputs: [WatchEngine.Output]) {
        for output in outputs {
            switch output {
            case let .packet(packet):
                if let screen { screen.add(WatchText.packet(packet)) } else if human { line(WatchText.packet(packet)) } else { context.events.emit(packet) }
            case let .finding(finding):
                if let screen { screen.add(WatchText.finding(finding), severity: WatchEngine.severity(finding.rule)) } else if human { line(WatchText.finding(finding)) } else { context.events.emit(finding) }
            }
        }
    }

    /// Watch is behind a flood (or no longer): a `sampling` event, or its words as a line; at a
    /// terminal the table's top line says it instead (`WatchStatus`).
    func sampling(_ sampling: Events.WatchSampling) {
        guard screen == nil else { return }
        if human { line(WatchText.sampling(sampling)) } else { context.events.emit(sampling) }
    }

    /// The table redrawn, at most a few times a second (`now` nil: at once, the last time).
    func tick(_ table: WatchTable, now: Double?, status: WatchStatus) {
        guard let screen, let terminal = context.terminal else { return }
        if let frame = screen.frame(table, now: now ?? Date().timeIntervalSince1970, status: status, force: now == nil) {
            terminal.line(frame, fd: STDOUT_FILENO)
        }
    }

    func finish(_ summary: Events.WatchSummary) {
        if human {
            for text in WatchText.summary(summary) { line(text) }
        } else {
            context.events.emit(summary)
        }
    }

    private func line(_ text: String) {
        if let terminal = context.terminal { terminal.line(text, fd: STDOUT_FILENO) } else { context.events.emitLine(text) }
    }
}

/// What the table's top line says of watch itself: what the kernel dropped, whether it samples.
struct WatchStatus: Sendable {
    var dropped = 0
    var sampling: Events.WatchSampling?

    /// `, sampling 1 in 9 (12,000 counted, not decoded), 3,000 dropped by the kernel`, or less.
    var words: String {
        var out = ""
        if let sampling, sampling.every > 1 { out += ", sampling 1 in \(sampling.every) (\(sampling.skimmed) counted, not decoded)" }
        if dropped > 0 { out += ", \(dropped) dropped by the kernel" }
        return out
    }
}

/// `watch`'s events in words.
enum WatchText {
    static func sampling(_ sampling: Events.WatchSampling) -> String {
        guard sampling.every > 1 else {
            return "decoding every packet again (\(sampling.skimmed) counted, not decoded, \(sampling.dropped) dropped by the kernel since watching began)"
        }
        return "sampling 1 in \(sampling.every): decoded \(sampling.decoded) of \(sampling.packets) packets in the last second, so that the host's daemon keeps the CPU (\(sampling.skimmed) counted, not decoded, \(sampling.dropped) dropped by the kernel since watching began)"
    }

    static func clock(_ captured: String) -> String {
        // 2026-11-21T21:20:23.123Z → 21:20:23.123
        guard let t = captured.firstIndex(of: "T") else { return captured }
        return String(captured[captured.index(after: t)...].prefix(12))
    }

    static func packet(_ packet: Events.Packet) -> String {
        var words: [String] = []
        for meaning in packet.meaning {
            switch meaning.kind {
            case "announced": words.append("announced \(meaning.name)")
            case "withdrawn": words.append("withdrawn \(meaning.name)")
            case "resolved": words.append("resolved \(meaning.name) → \(meaning.host ?? "?"):\(meaning.port.map(String.init) ?? "?")")
            case "address": words.append("address \(meaning.name) \((meaning.addresses ?? []).joined(separator: " "))")
            case "address-withdrawn": words.append("address gone \(meaning.name) \((meaning.addresses ?? []).joined(separator: " "))")
            case "probe": words.append("probe \(meaning.name)")
            default: words.append("asks \(meaning.name)")
            }
        }
        if words.isEmpty {
            words = packet.questions.map { "asks \($0.name) \($0.type)" } + packet.answers.map { "\($0.name) \($0.type) \($0.data)" }
        }
        let questions = packet.questions.map(\.type).joined(separator: ",")
        let kind = packet.kind == "query" ? "query\(questions.isEmpty ? "" : " " + questions)" : "response"
        let size = packet.answers.count + packet.additional.count
        let text = "\(clock(packet.captured)) \(packet.interface ?? "-") \(packet.source) \(kind)\(packet.kind == "response" ? " (\(size) record\(size == 1 ? "" : "s"))" : ""): "
            + (words.isEmpty ? "(empty)" : words.prefix(4).joined(separator: " · ") + (words.count > 4 ? " · +\(words.count - 4)" : ""))
        return TerminalText.escaped(text)
    }

    static func finding(_ finding: Events.Finding) -> String {
        TerminalText.escaped("finding \(finding.rule) on \(finding.host)\(finding.interface.map { " (\($0))" } ?? ""): \(finding.evidence) — \(finding.hint)")
    }

    static func summary(_ summary: Events.WatchSummary) -> [String] {
        let skimmed = summary.skimmed > 0 ? ", \(summary.skimmed) counted, not decoded, while sampling" : ""
        let dropped = summary.dropped > 0 ? ", \(summary.dropped) dropped by the kernel" : ""
        var lines = ["\(HumanRenderer.count(summary.packets, "packet")) (\(summary.malformed) malformed\(skimmed)\(dropped)), \(HumanRenderer.count(summary.findings, "finding"))"]
        if !summary.rules.isEmpty {
            lines.append("  findings: " + summary.rules.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        for host in summary.hosts.prefix(10) { lines.append("  \(host.address): \(HumanRenderer.count(host.packets, "packet"))") }
        return lines
    }
}
