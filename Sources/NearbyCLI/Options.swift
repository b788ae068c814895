import ArgumentParser
import NearbyCore

/// `--service`, shared by every command that touches the network.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The service type: 1–15 lowercase letters, digits and hyphens (MPC's rules).",
            discussion: "Defaults to $NEARBY_SERVICE, else 'nearby'. Advertised as _<TYPE>._tcp. 'browse' also takes any full DNS-SD type such as _http._tcp.",
            valueName: "type"))
    var service: String?

    func resolve(_ context: CommandContext) throws(NearbyError) -> ServiceType {
        if let service { return try ServiceType(service) }
        if let fromEnvironment = context.environment["NEARBY_SERVICE"], !fromEnvironment.isEmpty {
            return try ServiceType(fromEnvironment)
        }
        return .default
    }
}

/// `--verbose`, shared by every command.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Explain what happens on stderr (quiet by default).")
    var verbose = false
}
