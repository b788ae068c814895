import NearbyCore
import NearbyBase

extension Spelling {
    /// How `nearby` spells what the core's sentences name: the options as declared in
    /// Options.swift and the commands' own files, the commands as typed at a shell.
    static let commandLine = Spelling(
        option: { option in
            switch option {
            case .name: "--name"
            case .encryption: "--encryption"
            case .saveDirectory: "--save-dir"
            case .service: "--service"
            case .domain: "--domain"
            case .noLink: "--no-link"
            case .dnsServer: "--dns-server"
            case .dnsKey: "--dns-key"
            case .acceptFrom: "--accept-from"
            case .autoAccept: "--auto-accept"
            case .retryFor: "--retry-for"
            }
        },
        command: { command in
            switch command {
            case .advertise: "nearby advertise"
            case .accept: "nearby accept"
            case .doctor: "nearby doctor"
            case .identity: "nearby identity"
            case .invite: "nearby invite"
            case .send: "nearby send"
            case .sendLines: "nearby send --lines"
            case .stream: "nearby stream"
            case .streamListen: "nearby stream --listen"
            }
        })
}
