import ArgumentParser
import NearbyCore

/// The stream command. Its arguments are final; its behaviour arrives with streams. Until then it
/// says so and exits with status 11.
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
    struct Stream: NotYetBuilt {
        static let configuration = CommandConfiguration(
            commandName: "stream",
            abstract: "Pipe stdin to a peer and the peer's bytes to stdout (not built yet).")
        @Argument(help: "The peer.", completion: .peers) var peer: String?
        @Option(help: "The stream's name.") var name: String?
        @Flag(help: "Wait for an incoming stream instead.") var listen = false
        @Option(help: "With --listen: only from this peer.", completion: .peers) var from: String?
        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions
    }
}
