import ArgumentParser
import NearbyCore

/// The session commands. Their arguments are final; their behaviour arrives with sessions, files
/// and streams. Until then each says so and exits with status 11.
protocol NotYetBuilt: AsyncParsableCommand {
    var output: OutputOptions { get }
}

extension NotYetBuilt {
    func run() async throws {
        let context = CommandContext.current
        try await reporting(context, verbose: output.verbose) {
            throw NearbyError.notImplemented(command: Self.configuration.commandName ?? "\(Self.self)".lowercased())
        }
    }
}

extension Nearby {
    struct Invite: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "invite",
            abstract: "Invite a peer into a session (not built yet).")
        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT.") var peer: String
        @Option(help: "Context sent with the invitation.") var context: String?
        @Option(help: "Seconds to wait for an answer.") var timeout: Double = 30
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }

    struct Accept: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "accept",
            abstract: "Accept (or --decline) an invitation (not built yet).")
        @Argument(help: "The invitation ID or the inviting peer (default: the next invitation).") var invitation: String?
        @Flag(help: "Decline instead of accepting.") var decline = false
        @Option(help: "Only accept invitations from this peer.") var from: String?
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }

    struct Send: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "send",
            abstract: "Send a message to a peer (not built yet).")
        @Argument(help: "The peer.") var peer: String?
        @Argument(help: "The message (default: stdin).") var text: String?
        @Flag(help: "Send to every connected peer.") var all = false
        @Flag(help: "Unreliable delivery, as MPC's .unreliable.") var unreliable = false
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }

    struct SendFile: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "send-file",
            abstract: "Send files and directories to a peer (not built yet).")
        @Argument(help: "The peer.") var peer: String
        @Argument(help: "Files or directories to send.") var paths: [String] = []
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }

    struct Stream: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "stream",
            abstract: "Pipe stdin to a peer and the peer's bytes to stdout (not built yet).")
        @Argument(help: "The peer.") var peer: String?
        @Option(help: "The stream's name.") var name: String?
        @Flag(help: "Wait for an incoming stream instead.") var listen = false
        @Option(help: "With --listen: only from this peer.") var from: String?
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }

    struct Disconnect: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "disconnect",
            abstract: "Leave the session with a peer, or with --all (not built yet).")
        @Argument(help: "The peer.") var peer: String?
        @Flag(help: "Every connected peer.") var all = false
        @OptionGroup var output: OutputOptions
    }
}
