
/// How the program running the core spells its options and commands, for the sentences that tell
/// a person what to do next ("leave out --save-dir", "next: `nearby doctor bob`"). The core names
/// them by case and never spells one itself: the `nearby` CLI installs its spelling when it starts
/// (NearbyCLI/Spelling+CLI.swift, beside the options it declares). A program that installs none
/// gets plain words ("the save directory option", "the doctor command").
package struct Spelling: Sendable {
    package enum Option: Sendable, CaseIterable {
        case name, encryption, saveDirectory, service, domain, noLink, dnsServer, dnsKey, acceptFrom, autoAccept, retryFor
    }

    package enum Command: Sendable, CaseIterable {
        case advertise, accept, doctor, identity, invite, send, sendLines, stream, streamListen
    }

    package var option: @Sendable (Option) -> String
    package var command: @Sendable (Command) -> String

    package init(option: @escaping @Sendable (Option) -> String, command: @escaping @Sendable (Command) -> String) {
        self.option = option
        self.command = command
    }

    /// Words for a program that installs no spelling of its own.
    package static let plain = Spelling(
        option: { option in
            let words = switch option {
            case .name: "display name"
            case .encryption: "encryption"
            case .saveDirectory: "save directory"
            case .service: "service"
            case .domain: "domain"
            case .noLink: "no-link"
            case .dnsServer: "DNS server"
            case .dnsKey: "DNS key"
            case .acceptFrom: "accept-from"
            case .autoAccept: "auto-accept"
            case .retryFor: "retry-for"
            }
            return "the \(words) option"
        },
        command: { "the \(String(describing: $0)) command" })

    private static let installed = Locked(plain)

    /// Makes `spelling` the one every sentence uses from now on.
    package static func install(_ spelling: Spelling) { installed.withLock { $0 = spelling } }

    /// The option as the person types it, with its value when given: `--service chat`.
    package static func option(_ option: Option, _ value: String? = nil) -> String {
        let spelled = installed.withLock { $0.option }(option)
        return value.map { spelled + " " + $0 } ?? spelled
    }

    /// The command as the person types it, with its arguments: `nearby invite 10.0.0.2:4000`.
    package static func command(_ command: Command, _ arguments: String...) -> String {
        Self.command(command, arguments)
    }

    package static func command(_ command: Command, _ arguments: [String]) -> String {
        ([installed.withLock { $0.command }(command)] + arguments).joined(separator: " ")
    }
}
