import Foundation
import NIOCore
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
    public enum Operation: String, Codable, Sendable {
        case invite, accept, send, disconnect, sendFile = "send-file", stream, listen
    }
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
    /// The stream's name (`stream`, `listen`); for `listen`, `peers` may name who may open it.
    public var name: String?

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
                // A stream's client may end its bytes (EOF) while the peer's still flow to it.
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(unixDomainSocketPath: address.socket, cleanupExistingSocketFile: true) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
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
            var reader = LineReader()
            var line: String?
            while line == nil {
                guard let chunk = try await iterator.next() else { return }
                guard let found = try? reader.append(chunk) else { return }
                line = found
            }
            let (lines, continuation) = AsyncStream<String>.makeStream()
            let sink = ClientSink(continuation)
            let writer = Task {
                for await text in lines { try? await outbound.write(ByteBuffer(string: text + "\n")) }
            }
            var status: Int32 = 0
            do {
                let request = try JSONDecoder().decode(ControlRequest.self, from: Data((line ?? "").utf8))
                if request.op == .stream || request.op == .listen {
                    // After the events of setting it up and a {"stream":true} line, the connection
                    // carries the stream's raw bytes both ways.
                    let source = ChannelSource(leftover: reader.rest, iterator: iterator)
                    let ready: @Sendable () async -> Void = {
                        continuation.yield(#"{"stream":true}"#)
                        continuation.finish()
                        await writer.value
                    }
                    _ = try await stream(request, node: node, source: source, sink: ChannelSink(outbound, channel: client.channel), client: sink, ready: ready)
                    await closed(client.channel)
                    return
                }
                try await perform(request, node: node, sink: sink)
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

    static func stream(
        _ request: ControlRequest, node: Node, source: any ByteSource, sink: any ByteSink, client: any EventSink,
        ready: @escaping @Sendable () async -> Void
    ) async throws(NearbyError) -> StreamSummary {
        if request.op == .listen {
            return try await node.listenForStream(
                name: request.name, from: request.peers.first, source: source, sink: sink, client: client, ready: ready)
        }
        guard let peer = request.peers.first else { throw .invalidArgument("stream needs a peer") }
        return try await node.openStream(
            to: peer, name: request.name ?? "", timeout: request.timeout ?? 30, source: source, sink: sink, client: client, ready: ready)
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
        case .stream, .listen:
            throw .invalidArgument("streams need a connection of their own")  // served by `stream(…)`
        }
    }
}

/// Waits (at most 30 s) until a half-closed connection has closed by itself: with both directions
/// shut, NIO closes it once everything queued is written. Leaving earlier could drop the stream's
/// last bytes.
func closed(_ channel: any Channel) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { try? await channel.closeFuture.get() }
        group.addTask { try? await Task.sleep(for: .seconds(30)) }
        await group.next()
        group.cancelAll()
    }
}

/// Splits the first lines off a byte stream, bounded: a control request or answer line is at most
/// 8 MiB. What follows the line (`rest`) is left untouched, for the raw bytes of a stream.
struct LineReader {
    static let limit = 8 << 20
    private var pending = ByteBuffer()

    mutating func append(_ chunk: ByteBuffer) throws(NearbyError) -> String? {
        var chunk = chunk
        pending.writeBuffer(&chunk)
        return try line()
    }

    /// The next complete line already buffered, if any.
    mutating func line() throws(NearbyError) -> String? {
        guard let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            guard pending.readableBytes <= Self.limit else { throw .invalidArgument("a control line over 8 MiB") }
            return nil
        }
        let length = newline - pending.readerIndex
        let text = pending.readString(length: length) ?? ""
        pending.moveReaderIndex(forwardBy: 1)
        return text
    }

    var rest: ByteBuffer { pending }
}

public enum ControlClient {
    static func connect(_ address: NodeAddress) async -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? {
        guard FileManager.default.fileExists(atPath: address.socket) else { return nil }
        return try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(unixDomainSocketPath: address.socket) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
    }

    /// Sends a request to the running node and passes its event lines to `output` as they come.
    /// Returns the node's exit status for the work, or nil when no node is running (a socket file
    /// nobody listens on is a node that is gone).
    public static func perform(
        _ request: ControlRequest, address: NodeAddress, output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(bytes: try JSONEncoder().encode(request) + Data("\n".utf8)))
                var reader = LineReader()
                for try await chunk in inbound {
                    var next = try reader.append(chunk)
                    while let text = next {
                        if let status = statusLine(text) { return status }
                        output(text)
                        next = try reader.line()
                    }
                }
                throw NearbyError.connectionFailed("the node closed the control connection before answering")
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("talking to the node failed: \(error)")
        }
    }

    /// A stream through the running node: its setup events go to `output`, then `source` goes to
    /// the peer and the peer's bytes to `sink` until both end. Nil when no node is running.
    public static func stream(
        _ request: ControlRequest, address: NodeAddress, source: any ByteSource, sink: any ByteSink,
        output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(bytes: try JSONEncoder().encode(request) + Data("\n".utf8)))
                var iterator = inbound.makeAsyncIterator()
                var reader = LineReader()
                // Setup: event lines, then {"stream":true} — or a final status when it failed.
                setup: while let chunk = try await iterator.next() {
                    var next = try reader.append(chunk)
                    while let text = next {
                        if text == #"{"stream":true}"# { break setup }
                        if let status = statusLine(text) { return status }
                        output(text)
                        next = try reader.line()
                    }
                }
                let leftover = reader.rest
                return try await withThrowingTaskGroup(of: Void.self) { group in
                    let raw = channel.channel
                    group.addTask {
                        while let chunk = try await source.next() { try await outbound.write(chunk) }
                        await flushed(raw, ByteBuffer())
                        outbound.finish()
                    }
                    if leftover.readableBytes > 0 { try await sink.write(leftover) }
                    while let chunk = try await iterator.next() { try await sink.write(chunk) }
                    await sink.finish()
                    try await group.waitForAll()
                    await closed(channel.channel)
                    return 0
                }
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("the stream through the node failed: \(error)")
        }
    }

    static func statusLine(_ text: String) -> Int32? {
        guard text.hasPrefix(#"{"status":"#),
              let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let status = object["status"] as? Int
        else { return nil }
        return Int32(status)
    }
}
