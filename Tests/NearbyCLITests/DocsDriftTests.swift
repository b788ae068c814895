import Foundation
@testable import NearbyCLI
import NearbyCore
import Testing
@testable import NearbyBase
@testable import NearbyWire

/// The docs a script is written against stay true to the code: every error code the code can emit
/// is in docs/events.md's tables, every exit status in docs/exit-codes.md, and every reason a
/// connection is closed with (the `disconnected` event's `reason`, and what `withdrawn: …` and a
/// cut file repeat) in events.md's list of close reasons. Read from the sources, so a new code or
/// reason fails here until it is documented.
@Suite struct DocsDriftTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL

    private static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every Swift source of the given targets, as one string per file.
    private static func sources(_ targets: [String] = ["NearbyCore", "NearbyCLI"]) throws -> [(path: String, text: String)] {
        var found: [(String, String)] = []
        for target in targets {
            let base = root.appendingPathComponent("Sources/\(target)")
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                found.append(("\(target)/\(relative)", try String(contentsOf: base.appendingPathComponent(relative), encoding: .utf8)))
            }
        }
        return found
    }

    /// The error codes: NearbyError's and WideAreaFailure's `code` switches, and the codes a failed
    /// transfer or stream is given (`code: "…"`).
    static func emittedCodes() throws -> Set<String> {
        var codes = Set<String>()
        for file in ["Sources/NearbyBase/Support/NearbyError.swift", "Sources/NearbyBase/Support/WideAreaFailure.swift"] {
            let text = try read(file)
            guard let start = text.range(of: "package var code: String {") else { continue }
            let rest = text[start.upperBound...]
            let body = rest.range(of: "\n    }\n").map { rest[..<$0.lowerBound] } ?? rest
            for match in body.matches(of: /case [^:\n]+: "([a-z][a-z-]+)"/) { codes.insert(String(match.output.1)) }
        }
        for (_, text) in try sources() {
            for match in text.matches(of: /code: "([a-z][a-z-]+)"/) { codes.insert(String(match.output.1)) }
        }
        return codes
    }

    /// The literal part of every close reason: `close(because:)`, `finish(because:)`,
    /// `leave(_, because:)` (a `CloseReason`: `.ended("…")`, `.weLeft("…")`), the words of
    /// `CloseReason`'s cases, the state machine's `.close(reason:)` and `closing:`, and the
    /// "connection lost (…)" forms — up to the first interpolation.
    static func closeReasons() throws -> Set<String> {
        var reasons = Set<String>()
        for (_, text) in try sources(["NearbyCore", "NearbyWire", "NearbyTransfer"]) {
            let forms = text.matches(of: /(?:because|closing|close\(reason): (?:\.(ended|weLeft)\()?(?:[a-z]+ \? )?"([^"]+)"(?: : "([^"]+)")?/)
            for match in forms {
                let prefix = match.output.1 == "weLeft" ? "we left: " : ""
                for part in [match.output.2, match.output.3].compactMap({ $0 }) { reasons.insert(Self.literal(prefix + part)) }
            }
            for match in text.matches(of: /\.weLeft\("([^"]+)"\)/) { reasons.insert(Self.literal("we left: " + match.output.1)) }
            // CloseReason's own words, case by case.
            for match in text.matches(of: /case (?:let )?\.[a-zA-Z]+(?:\([a-z]+\))?: "([^"]+)"/) where text.contains("enum CloseReason") {
                reasons.insert(Self.literal(match.output.1))
            }
            for match in text.matches(of: /"(connection lost \([^"\\]*)/) { reasons.insert(Self.literal(String(match.output.1))) }
        }
        reasons.remove("")
        return reasons
    }

    /// `we left: \(reason)` → `we left:`; a reason that is only an interpolation gives "".
    static func literal(_ text: some StringProtocol) -> String {
        let head = text.range(of: "\\(").map { text[..<$0.lowerBound] } ?? text[...]
        return head.trimmingCharacters(in: .whitespaces)
    }

    @Test func everyErrorCodeIsInEventsMD() throws {
        let codes = try Self.emittedCodes()
        #expect(codes.count > 30, "\(codes.sorted())")
        let events = try Self.read("docs/events.md")
        let missing = codes.filter { !events.contains("| `\($0)` |") }.sorted()
        #expect(missing.isEmpty, "error codes the code emits that docs/events.md's error table does not list: \(missing)")
    }

    @Test func everyExitStatusIsInExitCodesMD() throws {
        let table = try Self.read("docs/exit-codes.md")
        let missing = ExitStatus.allCases.filter { !table.contains("| \($0.rawValue) |") }.map(\.rawValue)
        #expect(missing.isEmpty, "exit statuses not in docs/exit-codes.md's table: \(missing)")
    }

    @Test func everyCloseReasonIsInEventsMD() throws {
        let reasons = try Self.closeReasons()
        #expect(reasons.contains("the connection failed while sending") && reasons.contains("we left:"), "\(reasons.sorted())")
        let events = try Self.read("docs/events.md")
        guard let start = events.range(of: "### Close reasons") else {
            Issue.record("docs/events.md has no '### Close reasons' section")
            return
        }
        let section = events[start.upperBound...]
        let text = section.range(of: "\n#").map { section[..<$0.lowerBound] } ?? section
        let missing = reasons.filter { !text.contains("`\($0)") }.sorted()
        #expect(missing.isEmpty, "close reasons the code uses that docs/events.md's 'Close reasons' does not list: \(missing)")
    }

    /// The README's "wait, then send" recipe stops when `browse` fails: bash, with pipefail.
    @Test func theReadmeRecipeSetsPipefail() throws {
        let readme = try Self.read("README.md")
        guard let start = readme.range(of: "A script that waits for a peer, then sends it a message") else {
            Issue.record("the recipe is gone from the README")
            return
        }
        let block = readme[start.upperBound...].prefix(600)
        #expect(block.contains("set -euo pipefail") && block.contains("#!/bin/bash"), "\(block)")
    }

    /// The README shows what `identity --rename` prints (a line, as for people at a terminal), in
    /// the words HumanRenderer gives it.
    @Test func theReadmeShowsWhatRenamingPrints() throws {
        let readme = try Self.read("README.md")
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let command = try #require(lines.firstIndex { $0.hasPrefix("$ nearby identity --rename \"Bob's Pi\"") }, "the rename example is gone")
        let shown = String(lines[command + 1])
        let shape = /\d\d:\d\d:\d\d identity Bob's Pi \(09okw9tg08ewk\), fingerprint [0-9a-f]{16}…, \/\S+\/identity\.json/
        #expect(shown.wholeMatch(of: shape) != nil, "the README's line after the rename: \(shown)")
        let event = Events.IdentityShown(
            peer: PeerRef(id: "09okw9tg08ewk", name: "Bob's Pi"), fingerprint: String(repeating: "5c1f0e9a", count: 8),
            path: "/home/bob/.config/nearby/identity.json", created: "2026-11-21T21:32:20Z")
        let rendered = HumanRenderer().render(DecodedEvent(event, at: Date()))
        #expect(rendered.wholeMatch(of: shape) != nil, "what renaming prints: \(rendered)")
    }

    /// Each heading of scripts/demo says the command that runs under it.
    @Test func theDemoSaysTheCommandsItRuns() throws {
        let lines = try Self.read("scripts/demo").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var compared = 0
        for (index, line) in lines.enumerated() where line.hasPrefix("say \"h") && index + 1 < lines.count {
            guard let run = lines[index + 1].range(of: "\"$NEARBY\" "), let said = line.range(of: "nearby ") else { continue }
            var heading = String(line[said.lowerBound...]).replacingOccurrences(of: "\\\"", with: "\"")
            if heading.hasSuffix("\"") { heading.removeLast() }
            if let note = heading.range(of: " (") { heading = String(heading[..<note.lowerBound]) }
            var command = String(lines[index + 1][run.upperBound...])
            for end in [")", " >", " 2>", " |"] {
                if let cut = command.range(of: end) { command = String(command[..<cut.lowerBound]) }
            }
            #expect(heading.trimmingCharacters(in: .whitespaces) == "nearby " + command, "scripts/demo:\(index + 1)")
            compared += 1
        }
        #expect(compared >= 8)
    }
}
