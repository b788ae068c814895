import Foundation
import NearbyBase
import NearbyDiscovery

/// `browse --live` at a terminal: the peers and their hosts (`LiveBrowseTable`) redrawn in place
/// twice a second, the latest found/updated/lost lines below. Nil where there is no terminal to
/// draw on (a pipe, --json, TERM=dumb): there browse prints its events as ever.
final class BrowseScreen: Sendable {
    static let redrawEvery = 0.5
    static let keptLines = 200

    private struct State {
        var table = LiveBrowseTable()
        var lines: [String] = []
    }

    private let state = Locked(State())
    private let terminal: TerminalWriter
    private let service: String

    init?(context: CommandContext, service: String) {
        guard context.humanOutput, let terminal = context.terminal, terminal.stdoutIsTerminal, terminal.escapes else { return nil }
        self.terminal = terminal
        self.service = service
    }

    func apply(_ update: Browser.Update) {
        let now = Date().timeIntervalSince1970
        let words = Self.words(update, at: now)
        state.withLock { state in
            state.table.apply(update, now: now)
            if let words { state.lines.append(words) }
            if state.lines.count > Self.keptLines { state.lines.removeFirst(state.lines.count - Self.keptLines) }
        }
    }

    /// Runs `work` with the table redrawn beside it; the last frame stays on the screen.
    func drawing<T: Sendable>(_ work: () async -> T) async -> T {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    draw()
                    try? await Task.sleep(for: .seconds(Self.redrawEvery))
                }
            }
            let result = await work()
            group.cancelAll()
            await group.waitForAll()
            draw()
            return result
        }
    }

    private func draw() {
        let now = Date().timeIntervalSince1970
        let (top, lines) = state.withLock { state in
            state.table.expire(now: now)
            return (state.table.lines(now: now, service: service), state.lines)
        }
        let title = "nearby browse --live — \(service) (Ctrl-C to stop; without --live, JSON lines in a pipe)"
        terminal.line(LiveFrame.compose(top: [TerminalText.escaped(title)] + top, below: "changes", lines: lines, columns: terminal.columns), fd: STDOUT_FILENO)
    }

    static func words(_ update: Browser.Update, at time: Double) -> String? {
        let clock = WatchText.clock(EventEncoder.timestamp(Date(timeIntervalSince1970: time)))
        func describe(_ peer: DiscoveredPeer) -> String {
            let name = peer.txt.displayName.map { "\($0) (\(String(peer.claimedID.prefix(8))))" } ?? peer.instance
            let at = peer.host.map { " at \($0):\(peer.port.map(String.init) ?? "?")" } ?? ""
            let addresses = peer.addresses.isEmpty ? "" : " " + peer.addresses.joined(separator: " ")
            return name + at + addresses + (peer.interface.map { " (\($0))" } ?? "")
        }
        switch update {
        case let .found(peer): return TerminalText.escaped("\(clock) found \(describe(peer))")
        case let .updated(peer, changed): return TerminalText.escaped("\(clock) updated \(changed.joined(separator: ", ")): \(describe(peer))")
        case let .lost(peer): return TerminalText.escaped("\(clock) lost \(describe(peer))")
        case .failed: return nil
        }
    }
}
