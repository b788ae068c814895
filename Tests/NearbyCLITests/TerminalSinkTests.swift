import ArgumentParser
import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyBase

@Suite struct TerminalSinkTests {
    /// A terminal (or not) whose writes are kept: (fd, text) in order.
    private final class Screen: Sendable {
        let writes = Locked<[(Int32, String)]>([])
        func writer(stdout: Bool, stderr: Bool, environment: [String: String] = [:]) -> TerminalWriter {
            TerminalWriter(stdoutIsTerminal: stdout, stderrIsTerminal: stderr, environment: environment, columns: 100) { fd, text in
                self.writes.withLock { $0.append((fd, text)) }
            }
        }
        var all: String { writes.withLock { $0.map(\.1).joined() } }
        func on(_ fd: Int32) -> String { writes.withLock { $0.filter { $0.0 == fd }.map(\.1).joined() } }
    }

    private let peer = PeerRef(id: "3hx5hctom3pdm", name: "vm")

    private func transfer(into sink: TerminalSink) {
        sink.emit(Events.FileStarted(transfer: "t", direction: "send", peer: peer, path: "a.bin", bytes: 2048, skipped: 0))
        sink.emit(Events.Progress(transfer: "t", direction: "send", peer: peer, path: "a.bin", bytes: 1024, total: 2048, rate: 100))
        sink.emit(Events.Message(peer: peer, text: "hi", data: nil, bytes: 2))
        sink.emit(Events.Progress(transfer: "t", direction: "send", peer: peer, path: "a.bin", bytes: 2048, total: 2048, rate: 100))
        sink.emit(Events.FileSent(transfer: "t", peer: peer, path: "a.bin", bytes: 2048, skipped: 0, sha256: "abcdef", seconds: 1))
    }

    @Test func jsonOnATerminalCarriesNoRawControlOrBidiCharacters() throws {
        let screen = Screen()
        let sink = TerminalSink(writer: screen.writer(stdout: true, stderr: true), fd: 1, style: .json)
        let text = "\u{9b}2J\u{7f}\u{202e}\u{200b}\u{1b}]52;c;eA==\u{7}"
        sink.emit(Events.Message(peer: PeerRef(id: "x", name: "n\u{202e}"), text: text, data: nil, bytes: 1))
        // As an older node relays it: DEL, C1 and bidi raw inside the JSON string.
        sink.emitLine("{\"event\":\"message\",\"text\":\"\u{9b}2J\u{7f}\u{202e}\u{200b}\\u001b\"}")
        let shown = screen.all
        #expect(!shown.unicodeScalars.contains { $0 != "\n" && !TerminalText.isShowable($0) }, "\(shown.debugDescription)")
        for line in shown.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect((object["text"] as? String)?.hasPrefix("\u{9b}2J\u{7f}\u{202e}\u{200b}\u{1b}") == true)
        }
    }

    @Test func onATerminalTheBarIsClearedBeforeEveryLine() {
        let screen = Screen()
        transfer(into: TerminalSink(writer: screen.writer(stdout: true, stderr: true), fd: 1, style: .human))
        let shown = screen.all
        #expect(!shown.contains("{\""))
        // What stays on each line of the screen is what follows its last carriage return: never the bar.
        let lines = shown.components(separatedBy: "\n")
        #expect(lines.count == 4, "\(shown.debugDescription)")  // started, message, sent, and nothing after
        for line in lines.dropLast() {
            let visible = line.components(separatedBy: "\r").last ?? ""
            #expect(!visible.contains("[#") && !visible.contains("-]"), "\(line.debugDescription)")
            if line.contains("\r") { #expect(line.contains("\r\u{1b}[K\u{1b}[2m"), "\(line.debugDescription)") }
        }
        #expect(lines.last == "", "the summary ends the output: \(shown.debugDescription)")
        #expect(shown.contains("sha256 abcdef"))
        #expect(!shown.contains(#""event":"progress""#))
    }

    @Test func programsGetTheSameLinesAsBefore() {
        let screen = Screen()
        transfer(into: TerminalSink(writer: screen.writer(stdout: false, stderr: true), fd: 1, style: .json))
        let json = screen.on(1).split(separator: "\n")
        #expect(json.count == 5)
        #expect(json.allSatisfy { $0.hasPrefix(#"{"event":""#) })
        // The bar on stderr ends in a summary line.
        let stderr = screen.on(2)
        #expect(stderr.contains("a.bin [###############---------------]  50%"))
        #expect(stderr.hasSuffix("sent a.bin to vm: 2.0 KiB in 1.00 s, 2.0 KiB/s, sha256 abcdef\u{1b}[0m\n") || stderr.contains("sha256 abcdef"))
    }

    @Test func noColorMeansNoEscapesAtAll() {
        let screen = Screen()
        let writer = screen.writer(stdout: true, stderr: true, environment: ["NO_COLOR": "1"])
        transfer(into: TerminalSink(writer: writer, fd: 1, style: .human))
        #expect(!screen.all.contains("\u{1b}"))
        #expect(screen.all.contains("sent a.bin to vm"))
        let dumb = Screen()
        transfer(into: TerminalSink(writer: dumb.writer(stdout: true, stderr: true, environment: ["TERM": "dumb"]), fd: 1, style: .human))
        #expect(!dumb.all.contains("\u{1b}"))
    }

    @Test func theStyleComesFromTheFlagThenTheEnvironmentThenTheTerminal() {
        #expect(OutputStyle.resolve(.json, environment: ["NEARBY_OUTPUT": "human"], terminal: true) == .json)
        #expect(OutputStyle.resolve(nil, environment: ["NEARBY_OUTPUT": "human"], terminal: false) == .human)
        #expect(OutputStyle.resolve(nil, environment: ["NEARBY_OUTPUT": "json"], terminal: true) == .json)
        #expect(OutputStyle.resolve(nil, environment: [:], terminal: true) == .human)
        #expect(OutputStyle.resolve(nil, environment: [:], terminal: false) == .json)
    }

    @Test func logLinesClearTheBarToo() {
        let screen = Screen()
        let writer = screen.writer(stdout: false, stderr: true)
        writer.drawBar("a.bin [----]")
        writer.log("nearby: warning: careful\n")
        #expect(screen.on(2) == "\ra.bin [----]\u{1b}[K\r\u{1b}[Knearby: warning: careful\n\ra.bin [----]")
    }

    /// A command run in process against a screen: what it wrote on stdout.
    private func stdout(_ arguments: [String], terminal: Bool, environment: [String: String] = [:]) async -> String {
        let screen = Screen()
        var environment = environment
        environment["NEARBY_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-term-\(UUID().uuidString)").path
        let context = CommandContext(
            events: MemorySink(), environment: environment, hostName: { "test-host" },
            terminal: screen.writer(stdout: terminal, stderr: terminal, environment: environment))
        await CommandContext.$current.withValue(context) {
            guard var command = try? Nearby.parseAsRoot(arguments) as? any AsyncParsableCommand else { return }
            try? await command.run()
        }
        return screen.on(1)
    }

    @Test func commandsPickTheirStyleFromTheTerminalAndTheFlags() async {
        #expect(await stdout(["identity"], terminal: true, environment: ["NO_COLOR": "1"]).contains("identity test-host-"))
        #expect(await stdout(["identity"], terminal: true).contains("identity \u{1b}[1mtest-host-"))
        #expect(await stdout(["identity"], terminal: false).hasPrefix(#"{"event":"identity""#))
        #expect(await stdout(["identity", "--json"], terminal: true).hasPrefix(#"{"event":"identity""#))
        #expect(await stdout(["identity", "--human"], terminal: false).contains("identity test-host-"))
        #expect(await stdout(["identity"], terminal: false, environment: ["NEARBY_OUTPUT": "human"]).contains("identity test-host-"))
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["identity", "--json", "--human"]) }
    }
}
