import Foundation
import NIOCore
import NIOPosix
import NearbyBase
import NearbyControl
import NearbyWire
import NearbyTransfer

/// The node's control socket: one request per connection, served while the client stays. A client
/// that goes away (Ctrl-C, killed) takes its request with it: the work it waited for is cancelled,
/// so an interrupted `nearby accept` leaves no waiter behind to swallow the next invitation.
/// At most `ControlSocket.maxClients` are served at once, each request line at most `LineReader.requestLimit`.
package enum ControlServer {
    /// Serves requests until the calling task is cancelled.
    package static func run(node: Node, address: NodeAddress, active: ActiveRequests, ready: @Sendable () -> Void = {}) async throws(NearbyError) {
        try await ControlSocket.serve(address, receiveBuffer: Connections.receiveBuffer, active: active, ready: ready, refuse: refuse) { client in
            await serve(client, node: node)
        }
    }

    /// A client over `ControlSocket.maxClients`: an error and a status. Its request is not read, only let through
    /// (64 KiB, 2 s at most) before the connection closes: closing on bytes not read would reset
    /// it, and the client would lose the answer.
    private static func refuse(_ connection: ControlConnection) async {
        let error = NearbyError.connectionFailed(
            "the node serves \(ControlSocket.maxClients) clients at once, the most it does: try again when one of them is done")
        try? await connection.channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: ControlReply.event(EventEncoder().line(Events.Failure(error))).line + "\n"))
            try await outbound.write(ByteBuffer(string: ControlReply.status(error.exitStatus.rawValue).line + "\n"))
            outbound.finish()
            _ = await firstResult(within: .seconds(2)) { () -> Bool? in
                var seen = 0
                do {
                    for try await chunk in inbound {
                        seen += chunk.readableBytes
                        if seen > 64 << 10 { break }
                    }
                } catch {}
                return true
            }
        }
    }

    private static func serve(_ connection: ControlConnection, node: Node) async {
        let client = connection.channel
        try? await client.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var reader = LineReader(limit: LineReader.requestLimit)
            // The request line, in as many reads as it takes; over the limit, a status saying so.
            var line: Result<String, NearbyError>?
            while line == nil {
                guard let chunk = try await iterator.next() else { return }
                do throws(NearbyError) {
                    line = try reader.append(chunk).map { .success($0) }
                } catch {
                    line = .failure(error)
                }
            }
            let (lines, stream) = AsyncStream<String>.makeStream()
            // Bounded: a client that stops reading has its events dropped and counted (ClientSink).
            let sink = ClientSink(stream)
            let continuation = sink.replies
            let written = OneShot<Void>()
            await withTaskGroup(of: Void.self) { group in
                // The one writer of reply lines, in order; after a stream's `streamReady`, raw bytes.
                group.addTask {
                    for await text in lines {
                        try? await outbound.write(ByteBuffer(string: text + "\n"))
                        sink.written(text)
                    }
                    written.settle(())
                }
                let request: ControlRequest
                do throws(NearbyError) {
                    let text = try line?.get() ?? ""
                    guard let decoded = try? JSONDecoder().decode(ControlRequest.self, from: Data(text.utf8)) else {
                        throw .invalidArgument("the node could not read the request (is the client another version of nearby?)")
                    }
                    request = try await Requests.checked(decoded, by: node)
                } catch {
                    continuation.yield(ControlReply.status(report(error, to: sink)).line)
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
                    } ask: {
                        continuation.yield(ControlReply.passDescriptors.line)
                    }
                    return
                }
                if case .sendLines = request {
                    // The client's bytes after its request are the lines; their end is not its leaving.
                    var status: Int32 = 0
                    do throws(NearbyError) {
                        let source = ChannelSource(leftover: reader.rest, iterator: iterator)
                        _ = try await Requests.serve(request, node: node, asker: .init(events: sink, input: source))
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
                        _ = try await Requests.serve(request, node: node, asker: .init(events: sink))
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
        sink.emit(Events.Failure(error))
        return error.exitStatus.rawValue
    }
}
