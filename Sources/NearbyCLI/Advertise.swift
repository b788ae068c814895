import ArgumentParser
import NearbyCore

extension Nearby {
    struct Advertise: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make this peer discoverable until interrupted.",
            discussion: """
                Registers _<service>._tcp with DNS-SD: the instance name is the peer ID, the TXT \
                record carries the display name (_d), the discovery info and nearby's protocol key \
                (_nb), as Multipeer Connectivity does, so MPC apps see this peer too. Prints an \
                'advertising' event, then runs until SIGINT or SIGTERM, withdraws the advertisement \
                (browsers see 'lost' at once) and exits 0.

                Examples:
                  nearby advertise
                  nearby advertise --service chat --name "Build box" --info room=4.12 --info os=linux
                """)

        @OptionGroup var serviceOptions: ServiceOptions

        @Option(help: ArgumentHelp("Display name for this run (default: the identity's).", valueName: "name"))
        var name: String?

        @Option(
            name: .customLong("info"),
            help: ArgumentHelp(
                "Discovery info, repeatable. Each KEY=VALUE at most 255 bytes, 400 bytes in all.",
                valueName: "key=value"))
        var info: [String] = []

        @Option(help: ArgumentHelp("TCP port to listen on for sessions (default: any free port).", valueName: "port"))
        var port: Int = 0

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        }

        func run() async throws {
            let context = CommandContext.current
            let console = Console(verbose: output.verbose)
            try await reporting(context, verbose: output.verbose) {
                // Every refusal happens here, before anything touches the disk or the network.
                let service = try serviceOptions.resolve(context)
                if let name { try DisplayName.validate(name) }
                let discoveryInfo = try TXTRecord.parseInfo(info)
                let identity = try context.identity()
                let txt = TXTRecord(
                    displayName: name ?? identity.displayName, info: discoveryInfo,
                    protocolVersion: TXTRecord.protocolVersion)
                _ = try txt.encode()

                let listener = try await Listener.bind(port: port)
                let advertiser = Advertiser(
                    service: service, instance: identity.peerID.rawValue, port: UInt16(listener.port), txt: txt)
                do {
                    try await advertiser.start()
                } catch {
                    await listener.close()
                    throw error
                }
                context.events.emit(Events.Advertising(
                    peer: PeerRef(id: identity.peerID.rawValue, name: txt.displayName), service: service.name,
                    domain: "local.", port: listener.port, info: discoveryInfo))
                console.info("advertising \(service.registrationType) as \(identity.peerID) on port \(listener.port); Ctrl-C to stop")

                let signal = await TerminationSignal.next()
                console.info("signal \(signal): withdrawing the advertisement")
                advertiser.stop()
                await listener.close()
            }
        }
    }
}
