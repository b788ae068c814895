import ArgumentParser
import Foundation
import NearbyCore

extension EncryptionPreference: ExpressibleByArgument {}

/// Options of every command that opens sessions.
struct SessionOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Session encryption: required, optional or none (MPC's rules: required and none refuse each other).",
        valueName: "mode"))
    var encryption: EncryptionPreference = .required
}

/// `--timeout` of every command that may have to find and invite a peer first.
struct InviteTimeout: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds to wait for the peer to be found and to answer the invitation.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }
}

/// Where a receiving node puts files.
struct ReceiveOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("Where received files land (default: the working directory).", valueName: "dir"),
        completion: .directory)
    var saveDir: String?

    /// The directory, absolute, checked to exist and be writable before the node starts.
    func resolve() throws(NearbyError) -> String {
        let current = FileManager.default.currentDirectoryPath
        let path = saveDir.map { $0.hasPrefix("/") ? $0 : current + "/" + $0 } ?? current
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .ioFailure(path: path, reason: "--save-dir must be an existing directory")
        }
        guard FileManager.default.isWritableFile(atPath: path) else { throw .ioFailure(path: path, reason: "not writable") }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

/// A node started by this process: locked, listening, serving the control socket.
struct LocalNode {
    let node: Node
    let lock: NodeLock?
    let control: ControlService?

    /// Starts a node. `serve` takes the lock and opens the control socket (every node but a
    /// one-shot one).
    static func start(
        _ configuration: NodeConfiguration, identity: Identity, context: CommandContext, serve: Bool
    ) async throws(NearbyError) -> LocalNode {
        let address = NodeAddress(paths: context.paths, environment: context.environment, peerID: identity.peerID, service: configuration.service)
        let lock = serve ? try NodeLock(address) : nil
        do {
            let node = try Node(identity: identity, configuration: configuration, paths: context.paths, events: context.events)
            try await node.start()
            let control = serve ? try await ControlServer.run(node: node, address: address) : nil
            return LocalNode(node: node, lock: lock, control: control)
        } catch {
            lock?.release()
            throw error
        }
    }

    func stop(reason: String = "the node stopped") async {
        await control?.stop()
        await node.stop(reason: reason)
        lock?.release()
    }
}

extension CommandContext {
    /// Asks the running node (if any) to do the work, printing its event lines. Nil: no node runs.
    func viaRunningNode(_ request: ControlRequest, service: ServiceType) async throws(NearbyError) -> Int32? {
        let identity = try identity()
        let address = NodeAddress(paths: paths, environment: environment, peerID: identity.peerID, service: service)
        let events = self.events
        return try await ControlClient.perform(request, address: address) { events.emitLine($0) }
    }
}

/// Waits until SIGINT/SIGTERM, or until `condition` says the work is over.
func waitForEnd(_ node: Node, peer: PeerID?) async -> String {
    let changes = await node.sessionChanges()
    return await withTaskGroup(of: String.self) { group in
        group.addTask {
            let signal = await TerminationSignal.next()
            return signal == SIGINT ? "interrupted" : "terminated"
        }
        group.addTask {
            for await change in changes {
                if case let .disconnected(id, remaining) = change, peer == nil ? remaining == 0 : id == peer {
                    return "the peer left"
                }
            }
            return "stopped"
        }
        let first = await group.next() ?? "stopped"
        group.cancelAll()
        return first
    }
}

/// Exits with the status a node reported for a client's request.
func exitWith(_ status: Int32) throws {
    if status != 0 { throw ExitCode(status) }
}
