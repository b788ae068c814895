import ArgumentParser
import NearbyCore
import NearbyBase
import NearbyIdentity

/// `--service`, shared by every command that touches the network.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The service type: 1–15 lowercase letters, digits and hyphens (MPC's rules).",
            discussion: "Defaults to $NEARBY_SERVICE, else 'nearby'. Advertised as _<TYPE>._tcp. 'browse' also takes any full DNS-SD type such as _http._tcp.",
            valueName: "type"),
        completion: .services)
    var service: String?

    @OptionGroup var wideArea: WideAreaOptions

    func resolve(_ context: CommandContext) throws(NearbyError) -> ServiceType {
        if let service { return try ServiceType(option: service) }
        if let fromEnvironment = context.environment["NEARBY_SERVICE"], !fromEnvironment.isEmpty {
            return try ServiceType(option: fromEnvironment)
        }
        return .default
    }
}

/// `--verbose` and `--json` / `--human`, shared by every command.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Explain what happens on stderr (quiet by default).")
    var verbose = false

    @Flag var style: OutputStyle?

    /// The context with its events printed as asked: JSON lines, or lines for people (the default
    /// when `fd` is a terminal). A context without a terminal (a test's) keeps its sink.
    func configure(_ context: CommandContext, fd: Int32 = 1) -> CommandContext {
        guard let terminal = context.terminal else { return context }
        let chosen = OutputStyle.resolve(style, environment: context.environment, terminal: terminal.isTerminal(fd))
        if style == nil, let unknown = OutputStyle.unknownEnvironmentValue(context.environment) {
            terminal.line("nearby: NEARBY_OUTPUT=\(unknown) is neither json nor human: ignored", fd: 2)
        }
        NearbyLog.route { terminal.log($0) }
        var configured = context
        configured.events = TerminalSink(writer: terminal, fd: fd, style: chosen)
        configured.humanOutput = chosen == .human
        return configured
    }
}

/// `--name` of every command that can start a node: the display name this node shows, for this run.
struct NameOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Display name for this run (default: the identity's).",
        discussion: "Applies to a node this command starts; a running node keeps the name it has.",
        valueName: "name"))
    var name: String?

    /// The name, checked (inside `reporting`, so a bad one is an `invalid-name` error event).
    func resolve() throws(NearbyError) -> String? {
        if let name { try DisplayName.validate(name) }
        return name
    }
}
