import Foundation
import NIOCore

/// `send --lines` and `send --unreliable`: many messages from one input, written in batches (one
/// flush per chunk of stdin, not one round trip per line), reliable as message frames or unreliable
/// as datagrams (`DatagramHub`).
extension Node {
    /// The sessions a send goes to: every session (`all`), and the peers named, invited first when needed.
    func sendTargets(_ queries: [String], all: Bool, timeout: Double, client: (any EventSink)?) async throws(NearbyError) -> [Link] {
        var targets: [Link] = []
        if all {
            targets = Array(sessions.values)
            guard !targets.isEmpty else { throw .notConnected("any peer (no sessions)") }
        }
        for query in queries {
            let peer = try await invite(query, context: nil, timeout: timeout, client: client)
            guard let link = sessions[peer.id] else { throw .notConnected(query) }
            targets.append(link)
        }
        return targets
    }

    /// Sends one message per line of `source` as each line is read, until the source ends — or
    /// until every target has left the session: then at once, with the reason, not at the next line
    /// (which would be read and lost).
    public nonisolated func sendLines(
        from source: any ByteSource, to queries: [String], all: Bool, unreliable: Bool, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let targets = try await sendTargets(queries, all: all, timeout: timeout, client: client)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.pumpLines(from: source, to: targets, unreliable: unreliable, client: client) }
                group.addTask {
                    for link in targets { await closed(link.transport, within: nil) }
                    if Task.isCancelled { return }
                    let who = targets.map { "\($0.peer.name) (\($0.peer.id))" }.joined(separator: ", ")
                    let why = targets.first?.closeReason ?? "connection lost"
                    throw NearbyError.connectionFailed("\(who) left the session (\(why)): stopped reading the lines")
                }
                try await group.next()
                group.cancelAll()
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .ioFailure(path: "stdin", reason: "\(error)")
        }
    }

    private nonisolated func pumpLines(
        from source: any ByteSource, to targets: [Link], unreliable: Bool, client: (any EventSink)?
    ) async throws(NearbyError) {
        var splitter = LineSplitter(limit: unreliable ? Datagram.maxPayload : Frame.maxPayload)
        while true {
            let chunk: ByteBuffer?
            do {
                chunk = try await source.next()
            } catch let error as NearbyError {
                throw error
            } catch {
                throw .ioFailure(path: "stdin", reason: "\(error)")
            }
            let lines = try chunk.map { chunk throws(NearbyError) in try splitter.append(chunk) } ?? splitter.finish().map { [$0] } ?? []
            if !lines.isEmpty { try await deliver(lines, to: targets, unreliable: unreliable, client: client) }
            if chunk == nil { return }
            // Input that is always ready and a writer with room never suspend: let the session's
            // own work (reading the peer, keepalives) run between batches.
            await Task.yield()
        }
    }

    /// One message (`send`, `send --unreliable`) to peers, inviting those not connected yet.
    public func sendMessage(
        _ payload: [UInt8], to queries: [String], all: Bool, unreliable: Bool, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let limit = unreliable ? Datagram.maxPayload : Frame.maxPayload
        guard payload.count <= limit else { throw .messageTooLarge(bytes: payload.count, limit: limit) }
        let targets = try await sendTargets(queries, all: all, timeout: timeout, client: client)
        try await deliver([ByteBuffer(bytes: payload)], to: targets, unreliable: unreliable, client: client, counted: false)
    }

    /// Writes `messages` to every target that is still in session, then reports them in one `sent` event.
    nonisolated func deliver(
        _ messages: [ByteBuffer], to targets: [Link], unreliable: Bool, client: (any EventSink)?, counted: Bool = true
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        var reached: [Link] = []
        for link in targets where link.transport.isActive {
            if unreliable {
                guard try await datagrams.send(messages, on: link) else {
                    throw .connectionFailed("\(link.peer.id) (\(link.peer.name)) set up no unreliable delivery in this session")
                }
            } else {
                do {
                    try await link.outbound.write(Frame.batch(messages.lazy.map { Frame(kind: .message, payload: $0) }))
                    // The writer took it, so the socket drains: the peer is reading. A peer busy with
                    // our backlog answers our ping only after it, and must not be taken for gone
                    // meanwhile; one that stopped reading stops our writes, and its silence counts.
                    link.heard()
                } catch {
                    link.close(because: "the connection failed while sending")
                    continue
                }
            }
            reached.append(link)
        }
        guard !reached.isEmpty else {
            throw .notConnected(targets.map { PeerSearchReport.label($0.peer.ref) }.joined(separator: ", "))
        }
        sink.emit(Events.Sent(
            peers: reached.map(\.peer.ref), bytes: messages.reduce(0) { $0 + $1.readableBytes }, reliable: !unreliable,
            messages: counted ? messages.count : nil))
    }

    // MARK: Hooks of the session (called from Node.perform / detach)

    /// The session began: tell the peer how to reach us with datagrams.
    func datagramsConnected(_ link: Link) async {
        guard let frame = await datagrams.setup(for: link) else {
            NearbyLog.logger.info("no UDP socket: unreliable messages from \(link.peer.id) cannot arrive")
            return
        }
        await link.send(frame)
    }
}

extension ControlClient {
    /// `send --lines` through the running node: the request, then `source`'s bytes as they come
    /// (the node cuts them into lines), then EOF; the node's event lines go to `output`. Nil when no
    /// node is running.
    public static func sendLines(
        _ request: ControlRequest, address: NodeAddress, source: any ByteSource, output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(try requestLine(request))
                return try await withThrowingTaskGroup(of: Int32?.self) { group in
                    group.addTask {
                        // A failed write means the node answered and closed: its status says why.
                        do {
                            while let chunk = try await source.next() { try await outbound.write(chunk) }
                            outbound.finish()
                        } catch {}
                        return nil
                    }
                    group.addTask {
                        if let status = try await status(from: inbound, output: output) { return status }
                        throw NearbyError.connectionFailed("the node closed the control connection before answering")
                    }
                    // The node's answer ends it, even while stdin is still open (a failure).
                    while let result = try await group.next() {
                        if let status = result {
                            group.cancelAll()
                            return status
                        }
                    }
                    throw NearbyError.connectionFailed("the node closed the control connection before answering")
                }
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("talking to the node failed: \(error)")
        }
    }
}
