import ArgumentParser
import NearbyCore

extension Nearby {
    struct IdentityCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "identity",
            abstract: "Show this peer's identity (created on first use), or rename it.",
            discussion: """
                The identity is a key pair stored in $NEARBY_HOME/identity.json (else \
                $XDG_CONFIG_HOME/nearby, else ~/.config/nearby), mode 0600. The peer ID is derived \
                from the public key and never changes; the display name does.

                Examples:
                  nearby identity | jq -r .peer.id
                  nearby identity --rename "Kitchen Pi"
                """)

        @Option(help: ArgumentHelp("Change the display name (1–63 bytes of UTF-8).", valueName: "name"))
        var rename: String?

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                let identity: Identity
                if let rename {
                    try DisplayName.validate(rename)
                    identity = try context.identityStore.rename(to: rename)
                } else {
                    identity = try context.identity()
                }
                context.events.emit(Events.IdentityShown(identity, path: context.identityStore.path))
            }
        }
    }
}
