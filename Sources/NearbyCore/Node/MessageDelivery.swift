import Foundation
import NIOCore
import NearbyBase
import NearbyWire
import NearbyTransfer

/// `send`, `send --lines` and `send --unreliable` once the sessions are there: many messages from
/// one input, written in batches (one flush per chunk of stdin, not one round trip per line),
/// reliable as message frames or unreliable as datagrams (`DatagramHub`), each batch reported in one
/// `sent` event. The node finds the sessions (`Node.sendTargets`); this only writes.
struct MessageDelivery: Sendable {
    let events: any EventSink
    let datagrams: DatagramHub

    /// Sends one message per line of `source` as each line is read, until the source ends — or
    /// until every target has left the session: then at once, with the reason, not at the next line
    /// (which would be read and lost).
    func sendLines(from source: any ByteSource, to targets: [Link], unreliable: Bool, client: (any EventSink)?) async throws(NearbyError) {
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await pumpLines(from: source, to: targets, unreliable: unreliable, client: client) }
                group.addTask {
                    for link in targets { await link.closed() }
                    if Task.isCancelled { return }
                    let who = targets.map { "\($0.peer.name) (\($0.peer.id))" }.joined(separator: ", ")
                    let why = targets.first?.closeReason ?? .lost
                    throw NearbyError.connectionFailed("\(who) left the session (\(why)): stopped reading the lines")
                }
                try await group.next()
                group.cancelAll()
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .ioFailure(path: "stdin", reason: ErrorWords.describe(error))
        }
    }

    private func pumpLines(
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
                throw .ioFailure(path: "stdin", reason: ErrorWords.describe(error))
            }
            let lines = try chunk.map { chunk throws(NearbyError) in try splitter.append(chunk) } ?? splitter.finish().map { [$0] } ?? []
            if !lines.isEmpty { try await deliver(lines, to: targets, unreliable: unreliable, client: client) }
            if chunk == nil { return }
            // Input that is always ready and a writer with room never suspend: let the session's
            // own work (reading the peer, keepalives) run between batches.
            await Task.yield()
        }
    }

    /// Writes `messages` to every target that is still in session, then reports them in one `sent` event.
    func deliver(
        _ messages: [ByteBuffer], to targets: [Link], unreliable: Bool, client: (any EventSink)?, counted: Bool = true
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        var reached: [Link] = []
        for link in targets where link.isActive {
            if unreliable {
                guard try await datagrams.send(messages, on: link) else {
                    throw .connectionFailed("\(link.peer.id) (\(link.peer.name)) set up no unreliable delivery in this session")
                }
            } else {
                do {
                    try await link.sendMessages(messages)
                    // The writer took it, so the socket drains: the peer is reading. A peer busy with
                    // our backlog answers our ping only after it, and must not be taken for gone
                    // meanwhile; one that stopped reading stops our writes, and its silence counts.
                    link.heard()
                } catch {
                    link.close(because: .sendFailed)
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
}
