import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

extension CompletionKind {
    /// Completes a PEER with the IDs and display names of peers `nearby browse` found lately.
    ///
    /// The shell runs `nearby ---completion …` while the user types: this only reads
    /// `recent-peers.json` — no network, no identity, nothing written.
    static var peers: CompletionKind {
        .custom { words, _, _ in
            PeerCompletion.candidates(words: words, environment: ProcessInfo.processInfo.environment)
                .map { PeerCompletion.escaped($0, for: CompletionShell.requesting) }
        }
    }
}

extension CompletionKind {
    /// Completes `--service` with the service types of peers `nearby browse` found lately, then the
    /// default — from `recent-peers.json` only, as `.peers` does.
    static var services: CompletionKind {
        .custom { _, _, _ in
            let recent = RecentPeers(paths: NearbyPaths(environment: ProcessInfo.processInfo.environment)).services()
            return (recent + [ServiceType.default.name]).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
                .map { PeerCompletion.escaped($0, for: CompletionShell.requesting) }
        }
    }
}

enum PeerCompletion {
    /// Recent peers on the service the command line would use: `--service`, else `$NEARBY_SERVICE`,
    /// else the default, as `ServiceOptions.resolve` decides.
    static func candidates(words: [String], environment: [String: String]) -> [String] {
        let service =
            serviceOption(in: words)
            ?? environment["NEARBY_SERVICE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ServiceType.default.name
        return RecentPeers(paths: NearbyPaths(environment: environment)).candidates(service: service)
    }

    /// The value of the last `--service TYPE` or `--service=TYPE` before a `--` terminator.
    static func serviceOption(in words: [String]) -> String? {
        var service: String?
        var index = words.startIndex
        while index < words.endIndex {
            let word = words[index]
            if word == "--" { break }
            if word == "--service", index + 1 < words.endIndex {
                service = words[index + 1]
                index += 1
            } else if word.hasPrefix("--service=") {
                service = String(word.dropFirst("--service=".count))
            }
            index += 1
        }
        return service.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Makes a candidate arrive in the shell as the literal word.
    ///
    /// bash: ArgumentParser 1.8.2 hands custom completions to `compgen -W`, which expands each word
    /// (quotes, `$VAR`, `$(command)`): unescaped, a peer that calls itself `$(reboot)` would run a
    /// command on every TAB, and an apostrophe breaks every candidate. So every ASCII character that
    /// is not plainly literal gets a backslash. zsh: `_describe` reads `word:description`, so colons
    /// (and backslashes) are escaped. fish takes the words as they are.
    static func escaped(_ word: String, for shell: CompletionShell?) -> String {
        switch shell {
        case .bash?:
            var out = ""
            for scalar in word.unicodeScalars {
                if scalar.isASCII, !Self.literalInBash.contains(scalar) { out.append("\\") }
                out.unicodeScalars.append(scalar)
            }
            return out
        case .zsh?:
            return word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ":", with: "\\:")
        default:
            return word
        }
    }

    private static let literalInBash = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+,/@%".unicodeScalars)
}
