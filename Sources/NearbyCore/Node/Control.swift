import Foundation
import NIOCore
import NIOExtras
import NIOPosix
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a client asks the running node to do: one JSON line. The node answers with the event lines
/// of that work, then `{"status":N}` — the exit status the client should end with.
public struct ControlRequest: Codable, Sendable {
    public enum Operation: String, Codable, Sendable { case invite, accept, send, disconnect, sendFile = "send-file" }
    public var op: Operation
    public var peers: [String] = []
    public var context: String?
    public var timeout: Double?
    public var all = false
    public var decline = false
    /// Message payload, base64.
    public var data: String?
    /// Files to send (absolute paths, already checked by the client).
    public var files: [OutgoingFile] = []

    public init(op: Operation) { self.op = op }
}

/// Where a node's control socket and lock live: `$XDG_RUNTIME_DIR/nearby`, else `$NEARBY_HOME/run`;
/// one per identity and service type. The directory is 0700: the socket is the same user's only.
public struct NodeAddress: Sendable {
    public let directory: String
    public let name: String

    public init(paths: NearbyPaths, environment: [String: String], peerID: PeerID, service: ServiceType) {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            directory = runtime + "/nearby"
        } else {
            directory = paths.home + "/run"
        }
        name = "\(peerID.rawValue)-\(service.name)"
    }

    public var socket: String { "\(directory)/\(name).sock" }
    public var lock: String { "\(directory)/\(name).lock" }
}

/// At most one node per identity and service: an exclusive `flock` on the lock file, which the
/// kernel releases when the process dies however it dies — so a killed node's leftovers never
/// count as "running". The lock file holds the pid, for the error message.
public final class NodeLock: Sendable {
    private let fd: Int32
    public let address: NodeAddress

    public init(_ address: NodeAddress) throws(NearbyError) {
        self.address = address
        do {
            try FileManager.default.createDirectory(
                atPath: address.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .ioFailure(path: address.directory, reason: error.localizedDescription)
        }
        let fd = open(address.lock, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .ioFailure(path: address.lock, reason: Errno(rawValue: errno).description) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let pid = count > 0 ? Int32(String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : nil
            throw .nodeAlreadyRunning(pid: pid, socket: address.socket)
        }
        _ = ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
        // Whatever socket is there belongs to a node that is gone.
        unlink(address.socket)
    }

    public func release() {
        unlink(address.socket)
        close(fd)
    }
}

/// Event lines for one control client, written in order as the work happens.
final class ClientSink: EventSink {
    private let continuation: AsyncStream<String>.Continuation
    private let encoder = EventEncoder()
    init(_ continuation: AsyncStream<String>.Continuation) { self.continuation = continuation }
    func emit(_ body: some EventBody) { continuation.yield(encoder.line(body)) }
    func emitLine(_ line: String) { continuation.yield(line) }
}

/// A running control server.
public struct ControlService: Sendable {
    let task: Task<Void, Never>
    let active: ActiveRequests

    /// Lets requests in flight finish (a client asked for work whose end also ends this node, such
    /// as the last `disconnect`), then stops serving.
    public func stop(grace: Duration = .seconds(2)) async {
        let deadline = ContinuousClock.now + grace
        while active.count > 0, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
    }
}

final class ActiveRequests: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func begin() { value.withLock { $0 += 1 } }
    func end() { value.withLock { $0 -= 1 } }
}

public enum ControlServer {
    /// Serves requests until stopped.
    public static func run(node: Node, address: NodeAddress) async throws(NearbyError) -> ControlService {
        let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(unixDomainSocketPath: address.socket, cleanupExistingSocketFile: true) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineBasedFrameDecoder()))  // unbounded, but the socket is the same user's only
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            chmod(address.socket, 0o600)
        } catch {
            throw .ioFailure(path: address.socket, reason: "cannot listen: \(error)")
        }
        let active = ActiveRequests()
        let task = Task<Void, Never> {
            _ = try? await server.executeThenClose { clients in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await client in clients {
                        active.begin()
                        group.addTask {
                            await serve(client, node: node)
                            active.end()
                        }
                    }
                }
            }
        }
        return ControlService(task: task, active: active)
    }

    private static func serve(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, node: Node) async {
        try? await client.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            guard let line = try await iterator.next() else { return }
            let (lines, continuation) = AsyncStream<String>.makeStream()
            let sink = ClientSink(continuation)
            let writer = Task {
                for await text in lines { try? await outbound.write(ByteBuffer(string: text + "\n")) }
            }
            let status: Int32
            do {
                let request = try JSONDecoder().decode(ControlRequest.self, from: Data(line.readableBytesView))
                try await perform(request, node: node, sink: sink)
                status = 0
            } catch let error as NearbyError {
                sink.emit(Events.Failure(code: error.code, message: error.errorDescription ?? "", exitStatus: error.exitStatus.rawValue))
                status = error.exitStatus.rawValue
            } catch {
                let failure = NearbyError.invalidArgument("the node could not read the request: \(error)")
                sink.emit(Events.Failure(code: failure.code, message: failure.errorDescription ?? "", exitStatus: failure.exitStatus.rawValue))
                status = failure.exitStatus.rawValue
            }
            continuation.yield(#"{"status":\#(status)}"#)
            continuation.finish()
            await writer.value
        }
    }

    static func perform(_ request: ControlRequest, node: Node, sink: any EventSink) async throws(NearbyError) {
        let timeout = request.timeout ?? 30
        switch request.op {
        case .invite:
            guard let peer = request.peers.first else { throw .invalidArgument("invite needs a peer") }
            _ = try await node.invite(peer, context: request.context, timeout: timeout, client: sink)
        case .accept:
            _ = await node.accept(request.peers.first, decline: request.decline, client: sink)
        case .send:
            guard let encoded = request.data, let payload = Data(base64Encoded: encoded) else {
                throw .invalidArgument("send needs a base64 payload")
            }
            try await node.send(Array(payload), to: request.peers, all: request.all, timeout: timeout, client: sink)
        case .disconnect:
            _ = try await node.disconnect(request.peers.first, all: request.all, client: sink)
        case .sendFile:
            guard let peer = request.peers.first else { throw .invalidArgument("send-file needs a peer") }
            try await node.sendFiles(request.files, to: peer, timeout: timeout, client: sink)
        }
    }
}

public enum ControlClient {
    /// Sends a request to the running node and passes its event lines to `output` as they come.
    /// Returns the node's exit status for the work, or nil when no node is running.
    public static func perform(
        _ request: ControlRequest, address: NodeAddress, output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard FileManager.default.fileExists(atPath: address.socket) else { return nil }
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: address.socket) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineBasedFrameDecoder()))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            return nil  // a socket file nobody listens on: a node that is gone
        }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                let body = try JSONEncoder().encode(request)
                try await outbound.write(ByteBuffer(bytes: body + Data("\n".utf8)))
                for try await line in inbound {
                    let text = String(buffer: line)
                    if text.hasPrefix(#"{"status":"#),
                       let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                       let status = object["status"] as? Int {
                        return Int32(status)
                    }
                    output(text)
                }
                throw NearbyError.connectionFailed("the node closed the control connection before answering")
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("talking to the node failed: \(error)")
        }
    }
}
