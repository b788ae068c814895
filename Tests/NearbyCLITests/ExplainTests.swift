import ArgumentParser
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

@Suite struct ExplainTests {
    @Test func unknownSubcommandsAreNamedWithTheNearestOne() {
        let known = Nearby.subcommandNames
        #expect(SubcommandCheck.problem(in: ["sned", "bob"], known: known) == "unknown subcommand 'sned'; did you mean 'send'?")
        #expect(SubcommandCheck.problem(in: ["help", "nosuch"], known: known) == "unknown subcommand 'nosuch'")
        #expect(SubcommandCheck.problem(in: ["brwose"], known: known) == "unknown subcommand 'brwose'; did you mean 'browse'?")
        #expect(SubcommandCheck.problem(in: ["send", "bob", "hi"], known: known) == nil)
        #expect(SubcommandCheck.problem(in: ["help", "send"], known: known) == nil)
        #expect(SubcommandCheck.problem(in: ["--version"], known: known) == nil)
        #expect(SubcommandCheck.problem(in: [], known: known) == nil)
    }

    /// `nearby --json identity` is `nearby identity --json`; NEARBY_OUTPUT=xml is said, not ignored.
    @Test func outputFlagsBeforeTheSubcommandAreTaken() {
        let known = Nearby.subcommandNames
        #expect(SubcommandCheck.hoistingOutputFlags(["--json", "identity"], known: known) == ["identity", "--json"])
        #expect(SubcommandCheck.hoistingOutputFlags(["-v", "--human", "send", "bob", "hi"], known: known) == ["send", "-v", "--human", "bob", "hi"])
        #expect(SubcommandCheck.hoistingOutputFlags(["--json"], known: known) == ["--json"])
        #expect(SubcommandCheck.hoistingOutputFlags(["--version"], known: known) == ["--version"])
        #expect(SubcommandCheck.hoistingOutputFlags(["--json", "sned"], known: known) == ["--json", "sned"])
        #expect(OutputStyle.unknownEnvironmentValue(["NEARBY_OUTPUT": "xml"]) == "xml")
        #expect(OutputStyle.unknownEnvironmentValue(["NEARBY_OUTPUT": "Human"]) == nil)
        #expect(OutputStyle.unknownEnvironmentValue([:]) == nil)
    }

    /// Help is known by what was asked, not by the words ArgumentParser's text starts with.
    @Test func helpIsKnownByTheCommandLine() {
        #expect(SubcommandCheck.asksForHelp(["help"]))
        #expect(SubcommandCheck.asksForHelp(["help", "send"]))
        #expect(SubcommandCheck.asksForHelp(["send", "--help"]))
        #expect(SubcommandCheck.asksForHelp(["browse", "-h"]))
        #expect(!SubcommandCheck.asksForHelp(["--version"]))
        #expect(!SubcommandCheck.asksForHelp(["--experimental-dump-help"]))
        #expect(!SubcommandCheck.asksForHelp(["send", "bob", "--", "--help"]))
    }

    @Test func noSubcommandIsAUsageError() async {
        let command = Nearby()
        await #expect(throws: ValidationError.self) { try await command.run() }
    }

    @Test func helpWrapsProseButNeverAnExample() {
        let text = """
            OVERVIEW: Print peers as they are found and lost, which is a long sentence for a narrow screen.

            Examples:
              nearby browse --peer alice --timeout 10 >/dev/null && echo "alice is here"

            OPTIONS:
              --timeout <seconds>     Stop after this many seconds (exit 0; with --peer, exit 2).
            """
        let wrapped = HelpText.wrap(text, columns: 40)
        let lines = wrapped.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.contains("  nearby browse --peer alice --timeout 10 >/dev/null && echo \"alice is here\""))
        #expect(lines.filter { !$0.hasPrefix("  nearby") }.allSatisfy { $0.count <= 40 })
        // An option's continuation lines start under its help text.
        if let option = lines.firstIndex(where: { $0.hasPrefix("  --timeout") }) { #expect(lines[option + 1].hasPrefix(String(repeating: " ", count: 26)) && !lines[option + 1].hasPrefix(String(repeating: " ", count: 27))) }
    }

    /// Every option of every command says its default once: its own words, or ArgumentParser's
    /// "(default: …)", never both ("(default 5). (default: 5.0)").
    @Test func everyOptionSaysItsDefaultOnce() {
        func all(_ command: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
            [command] + command.configuration.subcommands.flatMap(all)
        }
        let commands = all(Nearby.self)
        #expect(commands.count > 10)
        for command in commands {
            let help = Nearby.helpMessage(for: command, columns: HelpText.unwrapped)
            for line in help.split(separator: "\n") where line.matches(of: /\((?:the )?default\b/).count > 1 {
                Issue.record("\(command._commandName) --help says its default twice: \(line)")
            }
        }
    }

    @Test func nearNamesDifferInCaseOrPrefix() {
        func peer(_ name: String) -> DiscoveredPeer {
            DiscoveredPeer(
                instance: "09okw9tg08ewk", txt: TXTRecord(displayName: name, info: [:], protocolVersion: "2"), host: nil, port: nil,
                addresses: [], interface: nil, elapsed: .zero)
        }
        #expect(peer("Bob's Pi").isNear("bob's pi"))
        #expect(peer("Bob's Pi").isNear("Bob"))
        #expect(!peer("Bob's Pi").isNear("Bob's Pi"))
        #expect(!peer("Alice").isNear("Bob"))
    }

    @Test func notFoundSaysWhatWasSeenAndWhatToDo() {
        let seen = PeerSearchReport(
            service: "_nearby._tcp", near: [PeerRef(id: "09okw9tg08ewk", name: "Bob's Pi")],
            elsewhere: [.init(service: "_chat._tcp", peer: PeerRef(id: "1x2y3z4w5v6u7", name: "bob's pi"))])
        let message = NearbyError.peerNotFound("bob's pi", waitedSeconds: 30, seen: seen).errorDescription ?? ""
        #expect(message.contains("'Bob's Pi'"))
        // In the words of whatever spelling is installed (the binary's: `--service chat`, `nearby doctor`).
        let doctor = Spelling.command(.doctor, #"'bob'\''s pi'"#)
        #expect(message.contains("is on _chat._tcp: add `\(Spelling.option(.service, "chat"))`"))
        #expect(message.contains("next: `\(doctor)`"))
        let event = Events.Failure(NearbyError.peerNotFound("bob's pi", waitedSeconds: 30, seen: seen))
        #expect(event.near?.count == 1 && event.elsewhere?.count == 1 && event.hint == doctor)
    }
}
