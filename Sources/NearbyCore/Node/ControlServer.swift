import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The node's control socket: one request per connection, served while the client stays. A client
/// that goes away (Ctrl-C, killed) takes its request with it: the work it waited for is cancelled,
/// so an interrupted `nearby accept` leaves no waiter behind to swallow the next invitation.
public enum ControlServer {
    /// Serves requests until the calling task is cancelled.
    public static func run(node: Node, address: NodeAddress, active: ActiveRequests, ready: @Sendable () -> Void = {}) async throws(NearbyError) {
        let server: NIOAsyncChannel<ControlConnection, Never>
        do {
            // Created under umask 0077: the socket is never reachable by others, not even before chmod.
            server = try await RunDirectory.withPrivateUmask {
                try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    // A client may end its bytes (EOF: send --lines) and still read its answer.
                    .childChannelOption(.allowRemoteHalfClosure, value: true)
                    .childChannelOption(.recvAllocator, value: Connections.receiveBuffer)
                    .bind(unixDomainSocketPath: address.socket, cleanupExistingSocketFile: true) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // Before the async wrapper: it sees the client's end whoever reads.
                            let gone = OneShot<Void>()
                            try channel.pipeline.syncOperations.addHandler(ClientGoneWatcher(gone))
                            return ControlConnection(
                                channel: try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                                    wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)),
                                gone: gone)
                        }
                    }
            }
            chmod(address.socket, 0o600)
        } catch {
            throw .ioFailure(path: address.socket, reason: "cannot listen: \(error)")
        }
        ready()
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

    private static func serve(_ connection: ControlConnection, node: Node) async {
        let client = connection.channel
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
            let written = OneShot<Void>()
            await withTaskGroup(of: Void.self) { group in
                // The one writer of reply lines, in order; after a stream's `streamReady`, raw bytes.
                group.addTask {
                    for await text in lines { try? await outbound.write(ByteBuffer(string: text + "\n")) }
                    written.settle(())
                }
                let request: ControlRequest
                do {
                    request = try JSONDecoder().decode(ControlRequest.self, from: Data((line ?? "").utf8))
                } catch {
                    let status = report(NearbyError.invalidArgument("the node could not read the request: \(error)"), to: sink)
                    continuation.yield(ControlReply.status(status).line)
                    continuation.finish()
                    return
                }
                if request.carriesStream {
                    await serveStream(request, node: node, connection: connection, rest: (reader.rest, iterator), outbound: outbound, events: sink) { info in
                        continuation.yield(ControlReply.streamReady(info).line)
                        continuation.finish()
                        await written.wait()
                    } failed: { error in
                        continuation.yield(ControlReply.status(report(error, to: sink)).line)
                        continuation.finish()
                    }
                    return
                }
                if case let .sendLines(peers, all, timeout, unreliable) = request {
                    // The client's bytes after its request are the lines; their end is not its leaving.
                    var status: Int32 = 0
                    do throws(NearbyError) {
                        let source = ChannelSource(leftover: reader.rest, iterator: iterator)
                        try await node.sendLines(from: source, to: peers, all: all, unreliable: unreliable, timeout: timeout, client: sink)
                    } catch {
                        status = report(error, to: sink)
                    }
                    continuation.yield(ControlReply.status(status).line)
                    continuation.finish()
                    return
                }
                group.addTask {
                    var status: Int32 = 0
                    do throws(NearbyError) {
                        try await perform(request, node: node, sink: sink)
                    } catch {
                        status = report(error, to: sink)
                    }
                    continuation.yield(ControlReply.status(status).line)
                    continuation.finish()
                }
                // The client sends nothing after its request: the end of its input means it has
                // gone (or read its answer and left), and whatever it waited for goes with it.
                while (try? await iterator.next()) != nil {}
                group.cancelAll()
            }
        }
    }

    /// The error event for the client; returns the exit status it means.
    private static func report(_ error: NearbyError, to sink: any EventSink) -> Int32 {
        sink.emit(Events.Failure(code: error.code, message: error.errorDescription ?? "", exitStatus: error.exitStatus.rawValue))
        return error.exitStatus.rawValue
    }

    static func stream(
        _ request: ControlRequest, node: Node, source: any ByteSource, sink: any ByteSink, client: any EventSink,
        ready: @escaping @Sendable (StreamInfo) async -> Void
    ) async throws(NearbyError) -> StreamSummary {
        switch request {
        case let .listen(name, from, _):
            return try await node.listenForStream(name: name, from: from, source: source, sink: sink, client: client, ready: ready)
        case let .stream(peer, name, timeout, _):
            return try await node.openStream(to: peer, name: name, timeout: timeout, source: source, sink: sink, client: client, ready: ready)
        default:
            throw .invalidArgument("not a stream request")
        }
    }

    static func perform(_ request: ControlRequest, node: Node, sink: any EventSink) async throws(NearbyError) {
        switch request {
        case let .invite(peer, context, timeout):
            _ = try await node.invite(peer, context: context, timeout: timeout, client: sink)
        case let .accept(query, decline):
            _ = try await node.accept(query, decline: decline, client: sink)
        case let .send(peers, all, timeout, payload):
            try await node.send(Array(payload), to: peers, all: all, timeout: timeout, client: sink)
        case let .disconnect(peer, all):
            _ = try await node.disconnect(peer, all: all, client: sink)
        case let .sendFiles(peer, files, timeout):
            try await node.sendFiles(files, to: peer, timeout: timeout, client: sink)
        case let .sendDatagram(peers, all, timeout, payload):
            try await node.sendMessage(Array(payload), to: peers, all: all, unreliable: true, timeout: timeout, client: sink)
        case .stream, .listen, .sendLines:
            throw .invalidArgument("streams and lines need a connection of their own")
        }
    }
}

/// How many control requests are being served: a node that stops lets them finish first.
public final class ActiveRequests: Sendable {
    private let value = Mutex(0)
    public init() {}
    public var count: Int { value.withLock { $0 } }
    func begin() { value.withLock { $0 += 1 } }
    func end() { value.withLock { $0 -= 1 } }
}

/// Waits (at most `limit`, 30 s unless told; nil: for as long as it takes) until a connection has
/// closed: with both directions shut, NIO closes it once everything queued is written, so leaving
/// earlier could drop the stream's last bytes. False when it did not close in time, or the waiting
/// task was cancelled.
@discardableResult
func closed(_ channel: any Channel, within limit: Duration? = .seconds(30)) async -> Bool {
    let done = OneShot<Void>()
    channel.closeFuture.whenComplete { _ in done.settle(()) }
    guard let limit else { return await done.wait() != nil }
    return await done.wait(until: .now + limit) != nil
}
