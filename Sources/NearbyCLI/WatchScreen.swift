import Foundation
import NearbyBase
import NearbyWatch
#if canImport(Glibc)
import Glibc
#endif

/// `watch` on a terminal: the link's table (hosts and their addresses per interface, services and
/// where they resolve, questions and whether anyone answered; each with its TTL left and when it
/// was last heard), redrawn in place a few times a second, the latest findings above it and
/// packet lines below it. Each frame goes home and overwrites, line by line, so nothing flickers.
final class WatchScreen: Sendable {
    static let redrawEvery = 0.25
    static let keptLines = 200
    static let panel = 5

    private struct State {
        var lines: [String] = []
        /// The panel's findings, each with its rule's severity: the most severe kept.
        var findings: [(severity: Int, line: String)] = []
        var packets = 0
        var lastDraw = 0.0
        var changed = true
    }

    private let state = Locked(State())
    private let columns: Int

    init(columns: Int) { self.columns = columns }

    /// A packet line, or a finding's (with its severity). Each line is kept cut to the screen's
    /// width: what a flood leaves in memory is `keptLines` short lines.
    func add(_ line: String, severity: Int? = nil) {
        let line = String(line.prefix(columns))
        state.withLock { state in
            if let severity {
                // Full: the oldest of the least severe goes, so noise never pushes out a fault.
                state.findings.append((severity, line))
                if state.findings.count > Self.panel, let lowest = state.findings.map(\.severity).min(),
                   let index = state.findings.firstIndex(where: { $0.severity == lowest }) {
                    state.findings.remove(at: index)
                }
            } else {
                state.packets += 1
            }
            state.lines.append(line)
            if state.lines.count > Self.keptLines { state.lines.removeFirst(state.lines.count - Self.keptLines) }
            state.changed = true
        }
    }

    /// The next frame, or nil when it is too soon (or nothing changed and the clock's second did not).
    func frame(_ table: WatchTable, now: Double, status: WatchStatus, force: Bool) -> String? {
        let wall = Date().timeIntervalSince1970
        let taken = state.withLock { state -> ([String], [String], Int)? in
            guard force || wall - state.lastDraw >= Self.redrawEvery else { return nil }
            state.lastDraw = wall
            state.changed = false
            return (state.lines, state.findings.map(\.line), state.packets)
        }
        guard let taken else { return nil }
        let (lines, findings, packets) = taken
        var top = Self.table(table, now: now, columns: columns)
        top.insert("nearby watch — \(HumanRenderer.count(packets, "packet"))\(status.words), \(HumanRenderer.count(findings.count, "recent finding")) (Ctrl-C: summary)", at: 0)
        // Above the table, which is what a short screen cuts: a flood of names never hides a fault.
        if !findings.isEmpty { top.insert(contentsOf: ["FINDINGS"] + findings.map { "  " + $0 }, at: 1) }
        return LiveFrame.compose(top: top, below: "packets", lines: lines, columns: columns)
    }

    static func table(_ table: WatchTable, now: Double, columns: Int) -> [String] {
        let snapshot = table.snapshot(now: now)
        var out: [String] = []
        func age(_ time: Double) -> String { "\(max(0, Int(now - time)))s ago" }
        func left(_ time: Double) -> String { time <= now ? "expired" : "\(Int(time - now))s" }
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }
        out.append("HOSTS \(snapshot.hosts.count)")
        for host in snapshot.hosts.prefix(12) {
            let addresses = host.addresses.sorted { $0.key < $1.key }
                .map { "\($0.value.joined(separator: " "))\($0.key.isEmpty ? "" : " (\($0.key))")" }.joined(separator: "; ")
            out.append("  " + pad(host.name, 28) + pad(addresses, 40) + pad("ttl " + left(host.expires), 12) + age(host.lastHeard))
        }
        out.append("SERVICES \(snapshot.services.count)")
        for service in snapshot.services.prefix(12) {
            let target = service.host.map { "→ \($0):\(service.port.map(String.init) ?? "?")" } ?? "(not resolved)"
            out.append("  " + pad(service.instance, 40) + pad(target, 28) + pad("ttl " + left(service.expires), 12) + age(service.lastHeard) + " from \(service.source)")
        }
        out.append("QUESTIONS \(snapshot.questions.count)")
        for question in snapshot.questions.prefix(8) {
            let answered = question.answered.map { $0 >= question.lastAsked ? "answered" : "answered before, not since" } ?? "unanswered"
            out.append("  " + pad("\(question.name) \(question.type)", 40) + pad("by \(question.askedBy) ×\(question.count)", 28) + pad(answered, 26) + age(question.lastAsked))
        }
        return out.map { TerminalText.escaped($0) }
    }

}

/// A live table on a terminal (`watch`, `browse --live`): each frame goes home and overwrites, line
/// by line, so nothing flickers; the latest lines go below the table, as many as the height allows.
enum LiveFrame {
    static func compose(top: [String], below: String, lines: [String], columns: Int) -> String {
        let rows = Self.rows()
        var top = top
        top.append(String(repeating: "─", count: min(columns - 1, 40)) + " " + below)
        let room = max(rows - 1 - top.count, 3)
        if top.count > rows - 4 { top = Array(top.prefix(max(rows - 4, 4))) }
        let shown = top + lines.suffix(room)
        return "\u{1b}[H" + shown.map { String($0.prefix(columns - 1)) + "\u{1b}[K" }.joined(separator: "\n") + "\u{1b}[J"
    }

    /// The terminal's height (24 when it cannot be told).
    static func rows() -> Int {
        guard let rows = terminalSize(STDOUT_FILENO)?.rows, rows > 0 else { return 24 }
        return rows
    }
}
