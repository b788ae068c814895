import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyControl
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

extension EncryptionPreference: ExpressibleByArgument {}

/// Options of every command that opens sessions.
struct SessionOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Session encryption: required (the default), optional or none (MPC's rules: required and none refuse each other).",
        valueName: "mode"))
    var encryption: EncryptionPreference?

    /// The mode for a node this command starts.
    var mode: EncryptionPreference { encryption ?? .required }

    /// What a running node must already be for a command given these options and `--name`.
    func expecting(name: String?, saveDirectory: String? = nil) -> NodeExpectations {
        NodeExpectations(displayName: name, encryption: encryption, saveDirectory: saveDirectory)
    }
}

/// What every command that may start a node of its own takes — the service (and wide-area domain),
/// the display name, the encryption mode — and the one way they become that node.
struct NodeOptions: ParsableArguments {
    @OptionGroup var serviceOptions: ServiceOptions
    @OptionGroup var naming: NameOptions
    @OptionGroup var session: SessionOptions

    /// The options, checked before anything touches the network.
    struct Resolved {
        let service: ServiceType
        /// `--name`, when given.
        let name: String?
        /// The node this command starts when no node is running.
        var configuration: NodeConfiguration
        let session: SessionOptions

        /// What a running node must already be to serve this command (`saveDirectory`: an explicit
        /// `--save-dir`).
        func expecting(saveDirectory: String? = nil) -> NodeExpectations {
            var expected = session.expecting(name: name, saveDirectory: saveDirectory)
            // A running node must serve the --domain asked for; it never searches elsewhere instead.
            expected.domains = configuration.wideAreas.isEmpty ? nil : configuration.wideAreas.map(\.domainText)
            expected.offLink = configuration.link ? nil : true
            return expected
        }
    }

    func resolve(_ context: CommandContext) throws(NearbyError) -> Resolved {
        let service = try serviceOptions.resolve(context)
        let name = try naming.resolve()
        var configuration = NodeConfiguration(service: service)
        configuration.wideAreas = try serviceOptions.wideArea.resolveAll(context)
        configuration.link = serviceOptions.wideArea.link
        configuration.encryption = session.mode
        configuration.displayName = name
        return Resolved(service: service, name: name, configuration: configuration, session: session)
    }
}

/// `--timeout` of every command that may have to find and invite a peer first.
struct InviteTimeout: ParsableArguments {
    @Option(name: .customLong("timeout"), help: ArgumentHelp(
        "Seconds to wait for the peer to be found and to answer the invitation (default: 30).",
        discussion: "With --localsend, the device's person has an hour to answer unless --timeout is given.", valueName: "seconds"))
    var given: Double?

    /// The wait for a peer; `given` alone is what the user said (`send-file --web` serves without a limit unless told).
    var timeout: Double { given ?? 30 }

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }
}

/// Where a receiving node puts files: nowhere unless told, so that no peer drops files anywhere
/// without consent.
struct ReceiveOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Accept files from peers in session and save them here, made (mode 700) if it does not exist (default: $\(SaveDirectory.environmentVariable); without either, file offers are refused).",
            valueName: "dir"),
        completion: .directory)
    var saveDir: String?

    /// The directory, absolute, checked to be a directory this user can write in before the node
    /// starts; nil when neither --save-dir nor the environment names one (the node then takes no
    /// files). One that does not exist yet is made (mode 700, its missing parents too), as a person
    /// who named `~/Downloads` expects: the user named it, so files go nowhere they did not choose.
    func resolve(_ environment: [String: String]) throws(NearbyError) -> String? {
        let named = saveDir.map { _ in Spelling.option(.saveDirectory) } ?? SaveDirectory.environmentVariable
        guard let chosen = saveDir ?? environment[SaveDirectory.environmentVariable].flatMap({ $0.isEmpty ? nil : $0 }) else {
            return nil
        }
        let current = FileManager.default.currentDirectoryPath
        let path = chosen.hasPrefix("/") ? chosen : current + "/" + chosen
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if let failure = Self.makeDirectories(path) {
                throw .ioFailure(path: path, reason: "\(named) names a directory that does not exist, and it cannot be made "
                    + "(\(String(cString: strerror(failure)))): give \(named) a directory you can write in")
            }
            FileHandle.standardError.write(Data("nearby: made the save directory \(path) (mode 700)\n".utf8))
        } else if !isDirectory.boolValue {
            throw .ioFailure(path: path, reason: "\(named) must name a directory, and this is a file")
        }
        guard FileManager.default.isWritableFile(atPath: path) else {
            throw .ioFailure(path: path, reason: "\(named) names a directory you cannot write in: give \(named) one you can (or 'chmod u+w' it)")
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// `mkdir -p -m 700`: nil, or the errno that stopped it.
    static func makeDirectories(_ path: String) -> Int32? {
        var made = ""
        for component in path.split(separator: "/") {
            made += "/" + component
            if mkdir(made, 0o700) != 0, errno != EEXIST { return errno }
        }
        return nil
    }
}

/// A node started by this process, for as long as a command's work needs it: locked, listening,
/// serving the control socket (every node but a one-shot one), with all its work owned by one task
/// group. However the work ends — done, failed, or cut short by a signal — the node says goodbye,
/// withdraws its advertisement and releases its lock before this returns.
struct LocalNode: Sendable {
    let node: Node

    /// Carries out `request` on this node, exactly as a running node does for a client
    /// (`Requests.serve`): only where the node lives differs. Its events are the node's own output.
    func serve(_ request: ControlRequest, asker: Requests.Asker = .init()) async throws(NearbyError) -> Requests.Served {
        try await Requests.serve(request, node: node, asker: asker)
    }

    static func run<T: Sendable>(
        _ configuration: NodeConfiguration, identity: Identity, context: CommandContext, serve: Bool,
        stopReason: @escaping @Sendable (Result<T, any Error>) -> String = { _ in "the node stopped" },
        _ body: @escaping @Sendable (LocalNode) async throws -> T
    ) async throws -> T {
        var configuration = configuration
        configuration.apply(environment: context.environment)
        let address = NodeAddress(paths: context.paths, environment: context.environment, peerID: identity.peerID, service: configuration.service)
        let lock = serve ? try NodeLock(address) : nil
        defer { lock?.release() }
        // What a stranger makes the node repeat (rejected connections, its errors) is summarised.
        let events = LimitedSink(context.events)
        defer {
            events.drain()
            NearbyLog.drainRepeats()
        }
        let node = try Node(identity: identity, configuration: configuration, paths: context.paths, events: events)
        // Ctrl-C while the daemon takes its time (a hung one holds a registration for 25 s).
        try await interruptible("starting the node") { try await node.start() }
        let active = ActiveRequests()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await node.run() }
            if serve {
                let bound = OneShot<NearbyError?>()
                group.addTask {
                    do throws(NearbyError) {
                        try await ControlServer.run(node: node, address: address, active: active) { bound.settle(nil) }
                    } catch {
                        bound.settle(error)
                    }
                }
                if let failure = await bound.wait() ?? nil {
                    await node.stop(reason: "the node could not start")
                    group.cancelAll()
                    throw failure
                }
            }
            let result: Result<T, any Error>
            do {
                result = .success(try await body(LocalNode(node: node)))
            } catch {
                result = .failure(error)
            }
            await node.stop(reason: stopReason(result))
            // A client whose own request ended this node (the last `disconnect`) gets its answer.
            await active.idle(by: .now + .seconds(1))
            group.cancelAll()
            return try result.get()
        }
    }
}

/// Runs `body` until it ends or SIGINT/SIGTERM arrives. A signal cancels it — every wait in the core
/// ends at once — and ends it with `NearbyError.cancelled` (exit 130).
func interruptible<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    TerminationSignal.install()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            guard await TerminationSignal.next() != nil else { return nil }
            throw NearbyError.cancelled(what)
        }
        defer { group.cancelAll() }
        while let next = try await group.next() {
            if let value = next { return value }
        }
        throw NearbyError.cancelled(what)
    }
}

extension CommandContext {
    /// Asks the running node (if any) to do the work, printing its event lines. Nil: no node runs.
    /// A failure the node reports ends the command with its status and sentence (`ReportedFailure`).
    /// Ctrl-C closes the connection, and the node drops the work.
    /// `expecting`: the options the command was given for a node of its own, which the running node
    /// must match (ControlRequest.expecting).
    @discardableResult
    func viaRunningNode(
        _ request: ControlRequest, service: ServiceType, expecting: NodeExpectations = NodeExpectations()
    ) async throws -> Int32? {
        try PeerQuery.check(request.namedPeers)
        let request = request.expecting(expecting)
        let identity = try identity()
        let address = NodeAddress(paths: paths, environment: environment, peerID: identity.peerID, service: service)
        let replies = NodeReplies(events)
        let status = try await interruptible(request.activity) {
            try await ControlClient.perform(request, address: address) { replies.print($0) }
        }
        if let status { try replies.outcome(status) }
        return status
    }
}

/// Why a command that stays in a session stopped waiting.
enum SessionEnd: Sendable, Equatable {
    case signal(Int32)
    case peerLeft
    /// `accept`: the files that came are in, and none has come for `TransferLedger.linger`.
    case filesDone
}

/// Waits until SIGINT/SIGTERM, until the peer (or, with nil, the last peer) leaves, or — with a
/// ledger — until files came and every one of them is in for 2 s (a peer that runs a node stays
/// in the session: files it sent must not leave `accept` waiting forever).
func waitForEnd(_ node: Node, peer: PeerID?, ledger: TransferLedger? = nil) async -> SessionEnd {
    let changes = await node.sessionChanges()
    return await withTaskGroup(of: SessionEnd.self) { group in
        group.addTask { .signal(await TerminationSignal.next() ?? SIGTERM) }
        group.addTask {
            for await change in changes {
                if case let .disconnected(id, remaining) = change, peer == nil ? remaining == 0 : id == peer {
                    return .peerLeft
                }
            }
            return .peerLeft
        }
        if let ledger {
            let updates = ledger.changes()
            group.addTask {
                for await _ in updates where ledger.tally.settled {
                    // Settled for the whole linger, or a new file started (the next update says).
                    try? await Task.sleep(for: settleLinger)
                    if Task.isCancelled { break }
                    if ledger.tally.settled { return .filesDone }
                }
                return await neverEnding()
            }
        }
        let first = await group.next() ?? .peerLeft
        group.cancelAll()
        return first
    }
}

/// How long `accept` waits after its files are in for more to come.
let settleLinger = Duration.seconds(2)

/// Suspends until cancelled.
private func neverEnding() async -> SessionEnd {
    let (stream, _) = AsyncStream<Void>.makeStream()
    for await _ in stream {}
    return .peerLeft
}

/// Why a node that ran a command's work stops, as its peers read it in their `disconnected`.
func stopReason<T>(_ result: Result<T, any Error>, done: String = "the node stopped", failed: String = "the node stopped") -> String {
    switch result {
    case .success: done
    case let .failure(error as NearbyError) where error.isCancellation: "interrupted"
    case .failure: failed
    }
}
