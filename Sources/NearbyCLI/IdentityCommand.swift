import ArgumentParser
import NearbyCore
import NearbyBase
import NearbyControl
import NearbyIdentity

extension Nearby {
    struct IdentityCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "identity",
            abstract: "Show this peer's identity (created on first use), or rename it.",
            discussion: """
                The identity is a key pair stored in $NEARBY_HOME/identity.json (else \
                $XDG_CONFIG_HOME/nearby, else ~/.config/nearby), mode 0600. The peer ID is derived \
                from the public key and never changes; the display name does. A new identity is named \
                after the host and the first four characters of its peer ID ('raspberrypi-09ok'), so \
                hosts of one name still look different. Renaming is refused while a node of this \
                identity runs (it would keep advertising the old name), and a name of only spaces \
                is refused.

                Examples:
                  nearby identity | jq -r .peer.id
                  nearby identity --rename "Kitchen Pi"
                """)

        @Option(help: ArgumentHelp("Change the display name (1–63 bytes of UTF-8).", valueName: "name"))
        var rename: String?

        @OptionGroup var output: OutputOptions

        /// A running node advertises the name it started with: renaming under it would leave the
        /// network seeing the old name with no word said, so it is refused, naming the nodes.
        static func refuseWhileNodesRun(_ context: CommandContext) throws(NearbyError) {
            let identity = try context.identity()
            let directory = NodeAddress(paths: context.paths, environment: context.environment, peerID: identity.peerID, service: .default).directory
            let running = NodeLock.running(in: directory, peerID: identity.peerID)
            guard !running.isEmpty else { return }
            let nodes = running.map { "\($0.service)\($0.pid.map { " (pid \($0))" } ?? "")" }.joined(separator: ", ")
            throw .invalidArgument(
                "a node is running for this identity on \(nodes) and advertises as '\(identity.displayName)': "
                    + "stop it (Ctrl-C where it runs), then rename; it would keep the old name until restarted")
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                let identity: Identity
                if let rename {
                    try DisplayName.validate(rename)
                    try Self.refuseWhileNodesRun(context)
                    identity = try context.identityStore.rename(to: rename)
                } else {
                    identity = try context.identity()
                }
                context.events.emit(Events.IdentityShown(identity, path: context.identityStore.path))
            }
        }
    }
}
