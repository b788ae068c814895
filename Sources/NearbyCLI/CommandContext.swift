import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyIdentity

/// What a command runs against: where events go, the environment, the files. Tests replace it with
/// `CommandContext.$current.withValue(…)`.
struct CommandContext: Sendable {
    package var events: any EventSink
    package var environment: [String: String]
    package var hostName: @Sendable () -> String
    /// The process's terminal, through which `OutputOptions.configure` prints events as JSON or for
    /// people; nil when a test captures the events itself.
    package var terminal: TerminalWriter?
    /// Events are printed for people: the error event already says what `reporting` would repeat.
    package var humanOutput = false

    package init(
        events: any EventSink, environment: [String: String], hostName: @escaping @Sendable () -> String,
        terminal: TerminalWriter? = nil
    ) {
        self.events = events
        self.environment = environment
        self.hostName = hostName
        self.terminal = terminal
    }

    package static let live = CommandContext(
        events: LineSink(), environment: ProcessInfo.processInfo.environment,
        hostName: { ProcessInfo.processInfo.hostName }, terminal: .live)

    @TaskLocal package static var current = CommandContext.live

    package var paths: NearbyPaths { NearbyPaths(environment: environment) }
    package var identityStore: IdentityStore { IdentityStore(paths: paths) }

    /// The identity, created on first use with the host name and a peer ID prefix as display name.
    package func identity() throws(NearbyError) -> Identity {
        try identityStore.loadOrCreate(namedAfter: { DisplayName.fromHostName(hostName(), peerID: $0) })
    }
}

/// Runs a command body; a `NearbyError` becomes an `error` event on stdout, a sentence on stderr and
/// the documented exit status.
func reporting(_ context: CommandContext, verbose: Bool, _ body: () async throws -> Void) async throws {
    // The sentence a failure ends with is wrapped to a terminal's width, never cut by it.
    let columns = context.terminal.flatMap { $0.stderrIsTerminal ? $0.columns : nil }
    NearbyLog.bootstrap(verbose: verbose, environment: context.environment)
    do {
        try await body()
        context.terminal?.endBar()
    } catch let failure as ReportedFailure {
        // The node's error event is printed already: the sentence only.
        context.terminal?.endBar()
        if !context.humanOutput { Console(verbose: verbose).error(failure.message, columns: columns) }
        throw ExitCode(failure.status)
    } catch let error as NearbyError {
        context.terminal?.endBar()
        let message = error.errorDescription ?? "\(error)"
        context.events.emit(Events.Failure(error, message: message))
        if !context.humanOutput { Console(verbose: verbose).error(message, columns: columns) }
        throw ExitCode(error.exitStatus.rawValue)
    } catch {
        context.terminal?.endBar()
        // Other errors are printed by ArgumentParser as they are; one whose words a terminal would
        // act on (text from a peer, somewhere in it) is printed escaped here instead.
        let described = "\(error)"
        guard !TerminalText.isShowable(described) else { throw error }
        Console(verbose: verbose).error(described)
        throw ExitCode.failure
    }
}
