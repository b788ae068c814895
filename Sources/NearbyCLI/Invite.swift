import ArgumentParser
import NearbyCore

extension Nearby {
    struct Invite: AsyncParsableCommand, NamesAPeer {
        static let configuration = CommandConfiguration(
            abstract: "Invite a peer into a session.",
            discussion: """
                Prints 'connecting', 'invited' (with the verification code the peer sees too), then \
                'connected' — or 'declined' (exit 3), or nothing in time (exit 4). With a node \
                running for this identity and service, the node does the work and this command \
                ends when the peer answered. Without one, this command becomes the node: it stays \
                in the session, printing its events, until the peer leaves or Ctrl-C.

                Examples:
                  nearby invite "Bob's Pi" --context "build logs"
                  nearby invite 09okw --timeout 10
                  nearby invite 192.168.1.20:39339      # no discovery; the identity is still checked
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT.", completion: .peers)
        var peer: String

        @Option(help: ArgumentHelp("Context sent with the invitation (up to 4096 bytes).", valueName: "text"))
        var context: String?

        @OptionGroup var wait: InviteTimeout

        @OptionGroup var node: NodeOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await performNamingThePeer(context, verbose: output.verbose)
        }

        var typedPeer: String? {
            get { peer }
            set { if let newValue { peer = newValue } }
        }

        func perform(_ context: CommandContext) async throws {
            let node = try self.node.resolve(context)
            let (peer, invitationContext, timeout) = (self.peer, self.context, wait.timeout)
            let request = ControlRequest.invite(peer: peer, context: invitationContext, timeout: timeout)
            if try await context.viaRunningNode(request, service: node.service, expecting: node.expecting()) != nil { return }

            try await LocalNode.run(node.configuration, identity: context.identity(), context: context, serve: true, stopReason: { stopReason($0) }) { local in
                let served = try await interruptible(request.activity) { try await local.serve(request) }
                if case let .peer(connected?) = served { _ = await waitForEnd(local.node, peer: connected.id) }
            }
        }
    }
}
