import ArgumentParser
import NearbyCore

extension Nearby {
    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept (or --decline) an invitation.",
            discussion: """
                With a node running (nearby advertise), answers its pending invitation — the one \
                named, the one from PEER, or the oldest to arrive (its 'accepted' event counts the \
                others still pending) — or waits for the next one. Without a node, \
                this command becomes an advertising node, accepts the first invitation (from PEER \
                only, with --from) and stays in the session until the peer leaves or Ctrl-C: \
                'nearby accept' on one machine and 'nearby send NAME hello' on another is all it takes. \
                Files are taken only with --save-dir (or NEARBY_SAVE_DIR).

                Examples:
                  nearby accept
                  nearby accept --save-dir ~/Downloads
                  nearby accept --from "Alice's laptop"
                  nearby accept k2j4x9a0b1 --decline
                """)

        @Argument(help: "The invitation ID or the inviting peer (default: the next invitation).", completion: .peers)
        var invitation: String?

        @Flag(help: "Decline instead of accepting.")
        var decline = false

        @Option(help: ArgumentHelp("Only invitations from this peer (ID, prefix or name).", valueName: "peer"), completion: .peers)
        var from: String?

        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var naming: NameOptions
        @OptionGroup var session: SessionOptions
        @OptionGroup var receive: ReceiveOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                let service = try serviceOptions.resolve(context)
                let name = try naming.resolve()
                let query = invitation ?? from
                let decline = self.decline
                if let status = try await context.viaRunningNode(.accept(query: query, decline: decline), service: service) {
                    return try exitWith(status)
                }
                var configuration = NodeConfiguration(service: service)
                configuration.wideArea = try serviceOptions.wideArea.resolve(context)
                configuration.encryption = session.encryption
                configuration.displayName = name
                configuration.advertise = true
                configuration.saveDirectory = try receive.resolve(context.environment)
                let identity = try context.identity()
                try await LocalNode.run(configuration, identity: identity, context: context, serve: true, stopReason: { stopReason($0) }) { local in
                    context.events.emit(await local.node.advertisingEvent)
                    let peer = try await interruptible("waiting for an invitation") {
                        try await local.node.accept(query, decline: decline, client: nil)
                    }
                    // In the session until the peer leaves or Ctrl-C, which ends it as asked (exit 0).
                    if let peer { _ = await waitForEnd(local.node, peer: peer.id) }
                }
            }
        }
    }
}
