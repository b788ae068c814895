import ArgumentParser
import Foundation
import NearbyDiscovery

/// The option an unknown one stands for. ArgumentParser suggests the nearest by edit distance, so
/// `browse --time 5` got `--live` (two edits) rather than `--timeout` (three): a person who typed
/// the start of an option meant that option. Ours: the one option the word begins, else the
/// nearest within two edits (as for subcommands, `SubcommandCheck`), else none.
enum OptionSuggestion {
    /// `text` (ArgumentParser's words) with its "Unknown option '--x'. Did you mean '--y'?" made ours.
    static func corrected(_ text: String, arguments: [String]) -> String {
        let marker = "Unknown option '"
        guard let start = text.range(of: marker), let end = text[start.upperBound...].firstIndex(of: "'") else { return text }
        let word = String(text[start.upperBound..<end])
        guard word.hasPrefix("--"), let options = longOptions(of: arguments.first) else { return text }
        // Ours replaces theirs, up to the end of its line.
        let lineEnd = text[end...].firstIndex(of: "\n") ?? text.endIndex
        let said = suggestion(for: word, among: options).map { "Unknown option '\(word)'. Did you mean '\($0)'?" } ?? "Unknown option '\(word)'"
        return text.replacingCharacters(in: start.lowerBound..<lineEnd, with: said)
    }

    static func suggestion(for word: String, among options: [String]) -> String? {
        let typed = word.lowercased()
        let begun = options.filter { $0.hasPrefix(typed) && typed.count >= 4 }
        if begun.count == 1 { return begun[0] }
        let scored = options.map { ($0, NearName.distance(typed, $0)) }.filter { $0.1 <= 2 }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The long options (`--timeout`) of the subcommand named `name`, from the help ArgumentParser
    /// dumps for it; nil for a name that is none.
    static func longOptions(of name: String?) -> [String]? {
        guard let name, let command = Nearby.configuration.subcommands.first(where: { $0._commandName == name }) else { return nil }
        guard let tool = try? JSONSerialization.jsonObject(with: Data(command._dumpHelp().utf8)) as? [String: Any],
              let info = tool["command"] as? [String: Any], let arguments = info["arguments"] as? [[String: Any]]
        else { return nil }
        return arguments.flatMap { argument in
            (argument["names"] as? [[String: Any]] ?? []).compactMap { name in
                name["kind"] as? String == "long" ? (name["name"] as? String).map { "--" + $0 } : nil
            }
        }
    }
}
