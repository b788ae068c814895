import ArgumentParser
import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyBase

@Suite struct CommandTests {
    private func run(_ arguments: [String], environment: [String: String]) async -> (lines: [String], status: Int32) {
        let sink = MemorySink()
        let context = CommandContext(events: sink, environment: environment, hostName: { "test-host.example" })
        var status: Int32 = 0
        await CommandContext.$current.withValue(context) {
            do {
                var command = try Nearby.parseAsRoot(arguments)
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
            } catch {
                status = Nearby.exitCode(for: error).rawValue
            }
        }
        return (sink.lines, status)
    }

    private func home() -> [String: String] {
        ["NEARBY_HOME": FileManager.default.temporaryDirectory.appendingPathComponent("nearby-cli-\(UUID().uuidString)").path]
    }

    @Test func identityIsCreatedFromTheHostNameAndKept() async throws {
        let environment = home()
        let first = await run(["identity"], environment: environment)
        #expect(first.status == 0)
        #expect(first.lines.count == 1)
        let id = try #require(first.lines[0].firstMatch(of: /"id":"([0-9a-z]{13})"/)?.1)
        #expect(first.lines[0].contains(#""name":"test-host-\#(id.prefix(4))""#))
        let renamed = await run(["identity", "--rename", "Kitchen"], environment: environment)
        #expect(renamed.lines[0].contains(#""name":"Kitchen""#))
        #expect(renamed.lines[0].contains(#""id":"\#(id)""#))
    }

    @Test(arguments: [
        (["advertise", "--service", "Bad_Type"], "invalid-service-type"),
        (["browse", "--service", "waytoolongservicetype"], "invalid-service-type"),
        (["advertise", "--name", String(repeating: "x", count: 64)], "invalid-name"),
        (["advertise", "--info", "novalue"], "invalid-info"),
        (["advertise", "--info", "k=" + String(repeating: "v", count: 300)], "invalid-info"),
        (["identity", "--rename", ""], "invalid-name"),
    ])
    func refusalsAreUsageErrorsWithAnEvent(_ arguments: [String], _ code: String) async {
        let result = await run(arguments, environment: home())
        #expect(result.status == ExitStatus.usage.rawValue)
        #expect(result.lines.count == 1)
        #expect(result.lines.first?.contains(#""code":"\#(code)""#) == true)
    }

    /// ArgumentParser's refusals end as every other usage error does: a final `error` event on
    /// stdout (in a pipe, or with --json), exit 64.
    @Test(arguments: [
        ["browse", "--tiemout", "3"], ["send-file"], ["advertise", "--port", "x"], ["doctor", "--timeout", "soon"],
        ["accept", "--json", "--nosuch"],
    ])
    func parserRefusalsEndWithAnErrorEvent(_ arguments: [String]) throws {
        var refusal: (any Error)?
        do { _ = try Nearby.parseAsRoot(arguments) } catch { refusal = error }
        let error = try #require(refusal)
        let line = try #require(Nearby.usageEvent(for: error, arguments: arguments, environment: [:], stdoutIsTerminal: false))
        let event = try #require(DecodedEvent(line: line, kinds: [Events.Failure.self])?.body as? Events.Failure)
        #expect(event.code == "invalid-argument" && event.exitStatus == 64 && !event.message.isEmpty && !event.message.contains("\n"), "\(line)")
        // On a terminal for people the words on stderr are the outcome; --json prints the event there too.
        let onTerminal = Nearby.usageEvent(for: error, arguments: arguments, environment: [:], stdoutIsTerminal: true)
        #expect((onTerminal != nil) == arguments.contains("--json"))
        // An exit status a command ends with has printed its own event.
        #expect(Nearby.usageEvent(for: ExitCode(64), arguments: arguments, environment: [:], stdoutIsTerminal: false) == nil)
    }

    @Test func environmentServiceIsValidatedToo() async {
        var environment = home()
        environment["NEARBY_SERVICE"] = "NOPE"
        let result = await run(["browse", "--timeout", "1"], environment: environment)
        #expect(result.status == 64)
        #expect(result.lines.first?.contains("invalid-service-type") == true)
    }

    @Test func anUnreliableMessageOverOneDatagramIsRefusedBeforeTheNetwork() async {
        let result = await run(["send", "bob", String(repeating: "x", count: 1201), "--unreliable"], environment: home())
        #expect(result.status == 64)
        #expect(result.lines.count == 1)
        #expect(result.lines.first?.contains(#""code":"message-too-large""#) == true)
    }

    @Test func aMissingFileIsRefusedBeforeTheNetwork() async {
        let result = await run(["send-file", "bob", "/nonexistent/file"], environment: home())
        #expect(result.status == ExitStatus.ioError.rawValue)
        #expect(result.lines.count == 1)
        #expect(result.lines.first?.contains(#""code":"io-error""#) == true)
    }

    @Test func disconnectNeedsARunningNode() async {
        var environment = home()
        environment["XDG_RUNTIME_DIR"] = environment["NEARBY_HOME"].map { $0 + "/run" }
        let result = await run(["disconnect", "--all"], environment: environment)
        #expect(result.status == ExitStatus.noNode.rawValue)
        #expect(result.lines.first?.contains(#""code":"no-node""#) == true)
    }

    @Test func argumentErrorsAreUsageErrors() {
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["send"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["disconnect"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["disconnect", "bob", "--all"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["invite", "bob", "--encryption", "maybe"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["stream"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["stream", "bob", "--listen"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["stream", "bob", "--from", "x"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["browse", "--count", "0"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["browse", "--timeout", "-1"]) }
        #expect(throws: (any Error).self) { try Nearby.parseAsRoot(["advertise", "--port", "70000"]) }
        #expect(Nearby.exitCode(for: ValidationError("x")).rawValue == 64)
    }

    private struct Foreign: Error, CustomStringConvertible {
        let description: String
    }

    /// An error that is not ours, carrying a peer's escape sequence, never reaches ArgumentParser's
    /// printing as it is; plain ones still do.
    @Test func otherErrorsWithRawEscapesAreNotPassedOnRaw() async throws {
        let context = CommandContext(events: MemorySink(), environment: home(), hostName: { "h" })
        await #expect(throws: ExitCode.failure) {
            try await reporting(context, verbose: false) { throw Foreign(description: "bad \u{1b}]52;c;eA==\u{7}") }
        }
        await #expect(throws: Foreign.self) {
            try await reporting(context, verbose: false) { throw Foreign(description: "plain") }
        }
    }
}

/// The spelling the binary installs names options and commands that exist: every option is a flag
/// some subcommand's help lists, every command is a subcommand with the flags it adds.
@Suite struct SpellingTests {
    private func help(_ subcommand: String) -> String {
        guard let command = Nearby.configuration.subcommands.first(where: { $0._commandName == subcommand }) else { return "" }
        return Nearby.helpMessage(for: command, columns: 1000)
    }

    @Test func everyOptionIsAFlagOfSomeCommand() {
        let helps = Nearby.subcommandNames.map(help).joined(separator: "\n")
        for option in Spelling.Option.allCases {
            let flag = Spelling.commandLine.option(option)
            #expect(flag.hasPrefix("--") && helps.contains(flag + " "), "\(option): \(flag)")
        }
    }

    @Test func everyCommandIsASubcommandWithItsFlags() {
        for command in Spelling.Command.allCases {
            let words = Spelling.commandLine.command(command).split(separator: " ").map(String.init)
            #expect(words.first == "nearby" && words.count >= 2, "\(command): \(words)")
            let text = help(words.count > 1 ? words[1] : "")
            #expect(!text.isEmpty, "\(command): no subcommand \(words)")
            for flag in words.dropFirst(2) { #expect(text.contains(flag), "\(command): \(flag) is not an option of \(words[1])") }
        }
    }
}
