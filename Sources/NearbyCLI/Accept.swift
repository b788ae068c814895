import ArgumentParser
import NearbyCore
import NearbyLocalSend
import NearbyWeb
import NearbyBase

extension Nearby {
    struct Accept: AsyncParsableCommand {
        /// How the session of an accepting node ended, and its files as they were then.
        struct Ended: Sendable {
            let end: SessionEnd
            let tally: TransferTally
        }

        /// How an accepting node's session ended, judged by the files it received: a file that did
        /// not arrive whole fails the command (its code's exit status), and so does Ctrl-C while
        /// one was still coming (130); a session that ends otherwise is success.
        static func outcome(_ end: SessionEnd, _ tally: TransferTally) throws(NearbyError) {
            if case .signal = end, !tally.inProgress.isEmpty {
                let count = tally.inProgress.count
                throw .cancelled("receiving \(count) file\(count == 1 ? "" : "s")")
            }
            if let failure = tally.failures.first { throw failure.error }
        }

        static let configuration = CommandConfiguration(
            abstract: "Accept (or --decline) an invitation.",
            discussion: """
                With a node running (nearby advertise), answers its pending invitation — the one \
                named, the one from PEER, or the oldest to arrive (its 'accepted' event counts the \
                others still pending) — or waits for the next one. Without a node, \
                this command becomes an advertising node, accepts the first invitation (from PEER \
                only, with --from) and stays in the session until the peer leaves or Ctrl-C: \
                'nearby accept' on one machine and 'nearby send NAME hello' on another is all it takes. \
                Files are taken only with --save-dir (or NEARBY_SAVE_DIR); once files came and none \
                has been coming for 2 s, it leaves the session and ends (a peer that runs a node \
                stays in session otherwise). It exits non-zero when a file did not arrive whole \
                (its code's status), 130 when Ctrl-C cut one short. --save-dir, --name and \
                --encryption are for the node it starts: with a node running they must match it. \
                --timeout bounds the wait for an invitation: none in time is exit 4 ('no-invitation').

                Examples:
                  nearby accept
                  nearby accept --save-dir ~/Downloads
                  nearby accept --from "Alice's laptop"
                  nearby accept k2j4x9a0b1 --decline
                  nearby accept --timeout 60 || echo "nobody invited us"

                With --localsend: answers the LocalSend transfer a running 'advertise --localsend' \
                holds for a person (or the next one), else serves LocalSend itself until its first \
                transfer (from --from only) ends; --timeout bounds the wait for that transfer as above.
                  nearby accept --localsend --save-dir ~/Downloads --timeout 120

                With --web: serves an upload page to any device with a browser on the LAN (a \
                'web-serving' event with its url, a QR code at a terminal); each file lands in \
                --save-dir as any stranger's file does ('file-received'). Ends on Ctrl-C, after \
                --timeout seconds, or once --count files arrived (then --timeout first is exit 4).
                  nearby accept --web --save-dir ~/Downloads --count 1
                """)

        @Argument(help: "The invitation ID or the inviting peer (default: the next invitation).", completion: .peers)
        var invitation: String?

        @Flag(help: "Decline instead of accepting.")
        var decline = false

        @Option(help: ArgumentHelp("Only invitations from this peer (ID, prefix or name).", valueName: "peer"), completion: .peers)
        var from: String?

        @Option(help: ArgumentHelp("Seconds to wait for an invitation (default: no limit); then exit 4.", valueName: "seconds"))
        var timeout: Double?

        @OptionGroup var node: NodeOptions
        @OptionGroup var receive: ReceiveOptions
        @OptionGroup var localSend: LocalSendOptions
        @OptionGroup var localSendPIN: LocalSendPIN
        @OptionGroup var web: WebOptions
        @OptionGroup var webDrop: WebDropOptions

        @Option(help: ArgumentHelp("With --web: end once this many files arrived.", valueName: "n"))
        var count: Int?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds") }
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
            if count != nil, !web.web { throw ValidationError("--count is for --web") }
            try webDrop.validate(web: web.web)
            if web.web, localSend.localsend || decline || invitation != nil || from != nil {
                throw ValidationError("--web takes no invitation, --from, --decline or --localsend: browsers are not invited")
            }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                if web.web {
                    return try await WebCommands.receive(
                        context, saveDir: try receive.resolve(context.environment),
                        device: try node.naming.resolve() ?? context.identity().displayName, count: count, timeout: timeout,
                        allowDotfiles: webDrop.allowDotfiles)
                }
                if localSend.enabled(context) {
                    var policy = LocalSendPolicy(saveDirectory: try receive.resolve(context.environment), pin: localSendPIN.pin)
                    policy.acceptFirst = !decline
                    policy.declineFirst = decline
                    policy.acceptFrom = (invitation ?? from).map { [$0] } ?? []
                    return try await LocalSendCommands.serve(
                        context, policy: policy, name: try node.naming.resolve(), port: nil, untilFirstTransfer: true, timeout: timeout)
                }
                let node = try self.node.resolve(context)
                let query = invitation ?? from
                let decline = self.decline
                // Only an explicit --save-dir is checked against a running node (the environment's is for
                // a node this command would start).
                let asked = receive.saveDir == nil ? nil : try receive.resolve([:])
                let expected = node.expecting(saveDirectory: asked)
                let request = ControlRequest.accept(query: query, decline: decline, timeout: timeout)
                if try await context.viaRunningNode(request, service: node.service, expecting: expected) != nil { return }
                var configuration = node.configuration
                configuration.advertise = true
                configuration.stopsAfter = timeout
                configuration.saveDirectory = try receive.resolve(context.environment)
                let identity = try context.identity()
                // The files this command receives decide how it ends (Accept.outcome).
                let ledger = TransferLedger(context.events)
                var local = context
                local.events = ledger
                let ended: Ended = try await LocalNode.run(
                    configuration, identity: identity, context: local, serve: true,
                    stopReason: { (result: Result<Ended, any Error>) -> String in
                        if case let .success(ended) = result, case .signal = ended.end { return "interrupted" }
                        return stopReason(result, done: "files received")
                    }
                ) { local in
                    for event in await local.node.advertisingEvents { context.events.emit(event) }
                    let served = try await interruptible(request.activity) { try await local.serve(request) }
                    guard case let .peer(peer?) = served else { return Ended(end: .peerLeft, tally: ledger.tally) }
                    let end = await waitForEnd(local.node, peer: peer.id, ledger: ledger)
                    // As it was when the wait ended: stopping the node fails what is still coming.
                    return Ended(end: end, tally: ledger.tally)
                }
                try Self.outcome(ended.end, ended.tally)
            }
        }
    }
}
