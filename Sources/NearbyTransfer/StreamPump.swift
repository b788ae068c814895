import NIOCore
import NearbyBase
import NearbyWire

/// A running stream's two directions (`nearby stream`, both ends): our bytes from a source to the
/// peer within its window, the peer's bytes to a sink, granting window as the sink takes them. The
/// source and sink are abstract (a client's pipe through the control socket, a passed descriptor,
/// the terminal): the pump only moves bytes. Where the stream is and why it ended is `StreamLife`
/// (`stream.life`), the first cause winning; the channel is the link's (`LinkChannels`), so the
/// link's end reaches the pump as that cause.
package struct StreamPump: Sendable {
    let stream: StreamChannel
    let link: any ChannelPort
    let events: any EventSink

    package init(stream: StreamChannel, link: any ChannelPort, events: any EventSink) {
        self.stream = stream
        self.link = link
        self.events = events
    }

    /// Runs both directions until each has ended: our bytes out within the peer's window, the peer's
    /// bytes in, granting window as the sink takes them. Done only when both directions ended (our
    /// `close` sent, the peer's received); anything else cuts the stream, reported by its first cause
    /// (`StreamLife`), and the peer gets a reset.
    package func run(source: any ByteSource, sink: any ByteSink) async throws(NearbyError) -> StreamSummary {
        let counts = Counts()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var sent: UInt64 = 0
                    defer { counts.sent(sent) }
                    while var chunk = try await source.next() {
                        while chunk.readableBytes > 0 {
                            // As much of the chunk as the window allows, in one write (`Link.sendData`).
                            guard let count = await stream.credit.take(upTo: chunk.readableBytes) else {
                                throw stream.life.withLock { $0.cause } ?? (Task.isCancelled ? .cancelled : .sessionEnded("the stream's window closed"))
                            }
                            await link.sendData(&chunk, count: count, on: stream.id)
                            sent += UInt64(count)
                        }
                    }
                    try stream.life.withLock { try $0.sentClose() }
                    await link.send(FrameBody.frame(.close, FrameBody.Close(sha256: "", bytes: sent), channel: stream.id))
                }
                group.addTask {
                    var received: UInt64 = 0
                    defer { counts.received(received) }
                    for await item in stream.inbound {
                        switch item {
                        case let .data(buffer):
                            try await sink.write(buffer)
                            received += UInt64(buffer.readableBytes)
                            await link.consumed(buffer.readableBytes, on: stream.id)
                        case .end:
                            await sink.finish()
                            return
                        case let .reset(cause):
                            throw cause
                        }
                    }
                    // Ended by our own cancellation (the other direction failed first): that failure
                    // is the cause, not an end of the session.
                    throw stream.life.withLock { $0.cause } ?? (Task.isCancelled ? .cancelled : .sessionEnded("the stream ended without the peer closing it"))
                }
                try await group.waitForAll()
            }
        } catch {
            // The first cause wins: a session that ended shows as that, not as the window it closed.
            let mine = error as? StreamLife.Cause ?? StreamLife.Cause(error)
            let cause = stream.life.withLock { life in life.cut(mine) ? mine : life.cause ?? mine }
            let failure = cause.error(label: stream.label)
            await sink.finish()
            // The peer learns why, unless it was the one to end it (a reset). A session that ended
            // gets one too: if it is still there after all, the peer's end must not wait forever.
            let reset: FrameBody.Reset? = switch cause {
            case let .failed(code, reason): FrameBody.Reset(reason: "the other side failed: \(reason)", code: code)
            case .cancelled: FrameBody.Reset(reason: "the other side was interrupted", code: .cancelled)
            case let .sessionEnded(reason): FrameBody.Reset(reason: "the other side's stream ended: \(reason)", code: .connectionLost)
            case .peerReset: nil
            }
            if let reset { await Task { await link.send(FrameBody.frame(.reset, reset, channel: stream.id)) }.value }
            let (sent, received) = counts.values
            events.emit(Events.StreamClosed(stream: "\(stream.id)", peer: stream.peer, name: stream.name, sent: sent, received: received, reason: failure.errorDescription ?? "failed"))
            throw failure
        }
        let (sent, received) = counts.values
        events.emit(Events.StreamClosed(stream: "\(stream.id)", peer: stream.peer, name: stream.name, sent: sent, received: received, reason: "done"))
        return StreamSummary(sent: sent, received: received)
    }
}

/// Bytes each way, readable after a failure too.
final class Counts: Sendable {
    private let state = Locked<(UInt64, UInt64)>((0, 0))
    func sent(_ n: UInt64) { state.withLock { $0.0 = n } }
    func received(_ n: UInt64) { state.withLock { $0.1 = n } }
    var values: (UInt64, UInt64) { state.withLock { $0 } }
}

/// What a finished stream moved.
package struct StreamSummary: Sendable {
    package var sent: UInt64
    package var received: UInt64
}
