import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyDiscovery
#if canImport(Glibc)
import Glibc
#endif

extension Nearby {
    /// Runs the command line as `main` does, first refusing a subcommand that does not exist —
    /// ArgumentParser reads `nearby sned` as an unexpected argument and `nearby help nosuch` as
    /// plain `help` — and printing help wrapped by `HelpText`, so no example breaks mid-command.
    package static func start(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) async {
        // Before anything can fail: every sentence of the core names options and commands our way.
        Spelling.install(.commandLine)
        MemoryBudget.returnBigBlocks()
        let arguments = SubcommandCheck.hoistingOutputFlags(arguments, known: subcommandNames)
        if let problem = SubcommandCheck.problem(in: arguments, known: subcommandNames) {
            endWithUsage(ValidationError(problem), arguments: arguments)
        }
        do {
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // Help is the clean exit of a command line that asks for it (not `--version`, not
            // `--experimental-dump-help`'s JSON): wrapped for this screen.
            if exitCode(for: error) == .success, SubcommandCheck.asksForHelp(arguments) {
                print(HelpText.wrap(fullMessage(for: error, columns: HelpText.unwrapped), columns: HelpText.screenColumns()))
                Foundation.exit(ExitCode.success.rawValue)
            }
            endWithUsage(error, arguments: arguments)
        }
    }

    /// Exits as ArgumentParser does (its words on stderr, its status), after a usage error's final
    /// `error` event on stdout, as every other failure has (`usageEvent`).
    private static func endWithUsage(_ error: any Error, arguments: [String]) -> Never {
        if let line = usageEvent(
            for: error, arguments: arguments, environment: ProcessInfo.processInfo.environment, stdoutIsTerminal: isatty(STDOUT_FILENO) == 1
        ) {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        // An unknown option: our suggestion in ArgumentParser's words (`OptionSuggestion`).
        let words = fullMessage(for: error)
        let corrected = OptionSuggestion.corrected(words, arguments: arguments)
        guard corrected != words else { exit(withError: error) }
        FileHandle.standardError.write(Data((corrected + "\n").utf8))
        Foundation.exit(exitCode(for: error).rawValue)
    }

    /// The final `error` event of a command line ArgumentParser refused (an unknown option, a
    /// missing argument, a bad value, a subcommand's own validation, no or an unknown subcommand):
    /// code `invalid-argument`, exit 64, in ArgumentParser's words. As a JSON line in a pipe or with
    /// `--json`, a line for people with `--human` into a pipe; nil on a terminal for people (the
    /// words on stderr are on the same screen), and for anything that is not a usage error — an
    /// `ExitCode` a command ends with has printed its event already.
    static func usageEvent(
        for error: any Error, arguments: [String], environment: [String: String], stdoutIsTerminal: Bool
    ) -> String? {
        let status = exitCode(for: error)
        guard status == .validationFailure, !(error is ExitCode) else { return nil }
        let options = arguments.prefix { $0 != "--" }
        // The last of --json and --human wins, as ArgumentParser reads them.
        let flag = options.last { $0 == "--json" || $0 == "--human" }.map { $0 == "--json" ? OutputStyle.json : .human }
        let style = OutputStyle.resolve(flag, environment: environment, terminal: stdoutIsTerminal)
        guard style == .json || !stdoutIsTerminal else { return nil }
        let words = OptionSuggestion.corrected(message(for: error), arguments: arguments).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        let failure = Events.Failure(
            code: NearbyError.invalidArgument("").code, message: words.filter { !$0.isEmpty }.joined(separator: " "), exitStatus: status.rawValue)
        return style == .json ? EventEncoder().line(failure) : HumanRenderer().render(DecodedEvent(failure, at: Date()))
    }

    /// `nearby` alone: usage on stderr and exit 64, as for any other incomplete command line
    /// (ArgumentParser's default would print the help on stdout and exit 0).
    package func run() async throws {
        throw ValidationError("missing subcommand (one of \(Self.subcommandNames.filter { $0 != "help" }.joined(separator: ", ")))")
    }

    static var subcommandNames: [String] {
        (configuration.subcommands.map { $0._commandName }) + ["help"]
    }
}

/// The first word of a command line checked against the subcommands, with a suggestion for a typo.
enum SubcommandCheck {
    /// `nearby --json identity`: the output flags every subcommand takes, written before the
    /// subcommand, moved after it (ArgumentParser reads them only there).
    static func hoistingOutputFlags(_ arguments: [String], known: [String]) -> [String] {
        let flags: Set<String> = ["--json", "--human", "--verbose", "-v"]
        let leading = arguments.prefix { flags.contains($0) }
        guard !leading.isEmpty, let command = arguments.dropFirst(leading.count).first, known.contains(command), command != "help" else {
            return arguments
        }
        return [command] + leading + arguments.dropFirst(leading.count + 1)
    }

    /// Whether the command line asks for help: `help [NAME]`, or `-h` / `--help` before any `--`.
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.first == "help" || arguments.prefix { $0 != "--" }.contains { ["-h", "--help", "-help"].contains($0) }
    }

    static func problem(in arguments: [String], known: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        guard known.contains(first) else { return unknown(first, known: known) }
        // `help NAME`: the name must be a subcommand too.
        if first == "help", let name = arguments.dropFirst().first, !name.hasPrefix("-"), !known.contains(name) {
            return unknown(name, known: known.filter { $0 != "help" })
        }
        return nil
    }

    private static func unknown(_ word: String, known: [String]) -> String {
        guard let near = suggestion(for: word, among: known) else { return "unknown subcommand '\(word)'" }
        return "unknown subcommand '\(word)'; did you mean '\(near)'?"
    }

    /// The closest name within two edits (or one the word begins), if there is one.
    static func suggestion(for word: String, among names: [String]) -> String? {
        let lowered = word.lowercased()
        if let prefixed = names.first(where: { $0.hasPrefix(lowered) && lowered.count >= 2 }) { return prefixed }
        let scored = names.map { ($0, distance(lowered, $0)) }.filter { $0.1 <= 2 }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit (`sned` → `send`).
    static func distance(_ a: String, _ b: String) -> Int { NearName.distance(a, b) }
}

/// Help text wrapped to the screen as ArgumentParser would, except that an example (an indented
/// line under "Examples:") is never broken: a shell command cut in two cannot be pasted.
enum HelpText {
    /// A width no help line reaches: ArgumentParser renders each paragraph on one line.
    static let unwrapped = 10_000

    /// $COLUMNS, else the width of the terminal on stdout, else 80 (ArgumentParser's own rule).
    static func screenColumns(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        if let columns = environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        if let columns = terminalSize(STDOUT_FILENO)?.columns, columns > 0 { return columns }
        return 80
    }

    static func wrap(_ text: String, columns: Int) -> String {
        var inExamples = false
        var out: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let leading = line.prefix { $0 == " " }.count
            if line.allSatisfy({ $0 == " " }) {
                inExamples = false
                out.append(String(line))
            } else if inExamples, leading > 0 {
                out.append(String(line))
            } else {
                if line.hasSuffix("Examples:") { inExamples = true }
                out.append(wrapLine(String(line), columns: columns, indent: hangingIndent(line, leading: leading)))
            }
        }
        return out.joined(separator: "\n")
    }

    /// Where a continuation starts: after an option's label (two spaces or more set it off),
    /// after "USAGE: ", else under the line's own first character.
    private static func hangingIndent(_ line: Substring, leading: Int) -> Int {
        if line.hasPrefix("USAGE: ") { return 7 }
        guard leading > 0, let gap = line.dropFirst(leading).range(of: "  ") else { return leading }
        let rest = line[gap.upperBound...]
        let text = rest.drop { $0 == " " }
        return text.isEmpty ? leading : line.distance(from: line.startIndex, to: text.startIndex)
    }

    /// Breaks at the last space that fits (or the first one after a word longer than the line).
    private static func wrapLine(_ line: String, columns: Int, indent: Int) -> String {
        guard line.count > columns, indent < columns - 10 else { return line }
        var lines: [String] = []
        var rest = Substring(line)
        var width = columns
        while rest.count > width {
            let window = rest.prefix(width + 1)
            let floor = rest.index(rest.startIndex, offsetBy: lines.isEmpty ? indent : 0)
            guard let space = window[floor...].lastIndex(of: " ") ?? rest[floor...].firstIndex(of: " ") else { break }
            lines.append(String(rest[..<space]))
            rest = rest[rest.index(after: space)...].drop { $0 == " " }
            width = columns - indent
            if rest.isEmpty { break }
        }
        if !rest.isEmpty { lines.append(String(rest)) }
        let pad = String(repeating: " ", count: indent)
        return lines.enumerated().map { $0.offset == 0 ? $0.element : pad + $0.element }.joined(separator: "\n")
    }
}
