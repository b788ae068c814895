import Foundation
import ArgumentParser
import NearbyCore
import NearbyWeb
import NearbyLocalSend
import NearbyBase
import NearbyDiscovery

extension Nearby {
    struct Advertise: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a node: be discoverable and take invitations until interrupted.",
            discussion: """
                Registers _<service>._tcp with DNS-SD: the instance name is the peer ID, the TXT \
                record carries the display name (_d), the discovery info and nearby's protocol key \
                (_nb), as Multipeer Connectivity does, so MPC apps see this peer too. Prints an \
                'advertising' event, then every event of the node: invitations (answer them with \
                'nearby accept' from another shell, or by --auto-accept / --accept-from), sessions, \
                messages; files only with --save-dir (or NEARBY_SAVE_DIR), else they are refused. \
                Other nearby commands of this user use this node. On SIGINT or SIGTERM it \
                says goodbye to every peer, withdraws the advertisement (browsers see 'lost' at \
                once) and exits 0.

                Examples:
                  nearby advertise
                  nearby advertise --service chat --name "Build box" --info room=4.12 --info os=linux
                  nearby advertise --auto-accept | jq -r 'select(.event=="message") | .text'
                  nearby advertise --accept-from "Alice's laptop" --save-dir ~/Downloads

                With --web (and --save-dir): also serves an upload page for any device with a \
                browser on the LAN ('web-serving' with its url, a QR code at a terminal), its files \
                landing in --save-dir as any stranger's do (with --localsend too: beside a LocalSend \
                receiver).
                  nearby advertise --web --save-dir ~/Downloads
                """)

        @OptionGroup var serviceOptions: ServiceOptions

        @OptionGroup var naming: NameOptions

        @Option(
            name: .customLong("info"),
            help: ArgumentHelp(
                "Discovery info, repeatable. Each KEY=VALUE at most 255 bytes, 400 bytes in all.",
                valueName: "key=value"))
        var info: [String] = []

        @Option(help: ArgumentHelp("TCP port to listen on for sessions (default: any free port).", valueName: "port"))
        var port: Int?

        @Flag(help: "Accept every invitation.")
        var autoAccept = false

        @Option(
            name: .customLong("accept-from"),
            help: ArgumentHelp("Accept invitations from this peer (ID, prefix or name); repeatable.", valueName: "peer"),
            completion: .peers)
        var acceptFrom: [String] = []

        @OptionGroup var session: SessionOptions
        @OptionGroup var receive: ReceiveOptions
        @OptionGroup var localSend: LocalSendOptions
        @OptionGroup var localSendPIN: LocalSendPIN

        @OptionGroup var web: WebOptions
        @OptionGroup var webDrop: WebDropOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let port, !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
            try webDrop.validate(web: web.web)
        }

        /// Waits for SIGINT/SIGTERM; with --web, serves the upload page (into --save-dir) meanwhile,
        /// on the node's admission and strangers' quota.
        static func webPage(_ context: CommandContext, web: Bool, node: Node, device: String, allowDotfiles: Bool) async throws -> Int32? {
            guard web else { return await TerminationSignal.next() }
            let (server, box) = try await WebCommands.dropBox(
                context, saveDir: node.configuration.saveDirectory, device: device, partials: node.partials, admission: node.admission,
                allowDotfiles: allowDotfiles)
            return await withTaskGroup(of: Int32??.self) { group in
                group.addTask {
                    await server.run(box)
                    return nil
                }
                group.addTask { .some(await TerminationSignal.next()) }
                defer { group.cancelAll() }
                while let next = await group.next() {
                    if case let .some(signal) = next { return signal }
                }
                return nil
            }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            let console = Console(verbose: output.verbose)
            try await reporting(context, verbose: output.verbose) {
                if localSend.enabled(context) {
                    var policy = LocalSendPolicy(saveDirectory: try receive.resolve(context.environment), pin: localSendPIN.pin)
                    policy.autoAccept = autoAccept
                    policy.acceptFrom = acceptFrom
                    if web.web, policy.saveDirectory == nil {
                        throw NearbyError.invalidArgument("--web needs --save-dir (or NEARBY_SAVE_DIR): where should uploads go?")
                    }
                    let name = try naming.resolve()
                    return try await LocalSendCommands.serve(
                        context, policy: policy, name: name, port: port, untilFirstTransfer: false,
                        webDevice: web.web ? try LocalSendCommands.alias(context, name: name) : nil, allowDotfiles: webDrop.allowDotfiles)
                }
                // Every refusal happens here, before anything touches the disk or the network.
                let service = try serviceOptions.resolve(context)
                let name = try naming.resolve()
                let discoveryInfo = try TXTRecord.parseInfo(info)
                let identity = try context.identity()
                let txt = TXTRecord(
                    displayName: name ?? identity.displayName, info: discoveryInfo,
                    protocolVersion: TXTRecord.protocolVersion)
                _ = try txt.encode()

                var configuration = NodeConfiguration(service: service)
                configuration.wideAreas = try serviceOptions.wideArea.resolveAll(context)
                configuration.link = serviceOptions.wideArea.link
                configuration.advertise = true
                configuration.displayName = name
                configuration.info = discoveryInfo
                configuration.port = port ?? 0
                configuration.encryption = session.mode
                configuration.autoAccept = autoAccept
                configuration.acceptFrom = acceptFrom
                configuration.saveDirectory = try receive.resolve(context.environment)
                if web.web, configuration.saveDirectory == nil {
                    throw NearbyError.invalidArgument("--web needs --save-dir (or NEARBY_SAVE_DIR): where should uploads go?")
                }
                let useWeb = web.web
                let allowDotfiles = webDrop.allowDotfiles
                try await LocalNode.run(configuration, identity: identity, context: context, serve: true) { local in
                    let advertising = await local.node.advertisingEvent
                    for event in await local.node.advertisingEvents { context.events.emit(event) }
                    console.info("advertising \(service.registrationType) as \(identity.peerID) on port \(advertising.port); Ctrl-C to stop")
                    let signal = try await Self.webPage(
                        context, web: useWeb, node: local.node, device: name ?? identity.displayName, allowDotfiles: allowDotfiles)
                    console.info("signal \(signal ?? 0): saying goodbye and withdrawing the advertisement")
                    // A person who pressed Ctrl-C sees it taken (exit 0, as browse: no final event).
                    if signal != nil, context.humanOutput, let terminal = context.terminal {
                        terminal.line("stopping: saying goodbye to peers and withdrawing the advertisement", fd: STDERR_FILENO)
                    }
                }
            }
        }
    }
}
