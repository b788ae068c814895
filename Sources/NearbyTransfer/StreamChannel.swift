import NIOCore
import NearbyBase
import NearbyWire

/// One stream: bytes both ways on one channel, each direction with its own window, `close` as a
/// half-close.
package final class StreamChannel: ChannelEnd {
    enum Inbound: Sendable {
        case data(ByteBuffer)
        case end
        case reset(StreamLife.Cause)
    }

    package let id: UInt32
    package let name: String
    package let peer: PeerRef
    let replies: AsyncStream<FrameBody.OpenReply>
    let replyContinuation: AsyncStream<FrameBody.OpenReply>.Continuation
    /// What the peer lets us send, summed however many window frames it sends.
    let credit = SendCredit(initial: Transfer.window)
    /// Bounded by our window: the peer may not send more than we granted.
    let inbound: AsyncStream<Inbound>
    let inboundContinuation: AsyncStream<Inbound>.Continuation
    /// Open, half-closed, done or cut — and why, the first cause winning.
    let life = Locked(StreamLife())

    package init(id: UInt32, name: String, peer: PeerRef) {
        self.id = id
        self.name = name
        self.peer = peer
        (replies, replyContinuation) = AsyncStream<FrameBody.OpenReply>.makeStream()
        (inbound, inboundContinuation) = AsyncStream<Inbound>.makeStream()
    }

    /// "the stream" or "stream 'NAME'", for sentences.
    var label: String { name.isEmpty ? "the stream" : "stream '\(name)'" }

    /// A frame of the peer on this stream, from the link's task.
    package func received(_ message: ChannelMessage) {
        switch message {
        case let .openReply(reply):
            replyContinuation.yield(reply)
        case let .data(bytes):
            // Bytes after the peer's close break the protocol: the link's `ChannelMux` cut it for
            // them already; the stream's own state only keeps them out should one get here.
            guard (try? life.withLock { try $0.mayRead() }) != nil else { return }
            // The payload is memory of its own (FrameSplitter): queued, it keeps no read buffer alive.
            inboundContinuation.yield(.data(bytes))
        case let .window(more):
            credit.add(Int(more))
        case .close:
            // A second close is refused by the `ChannelMux` as a violation; the stream's own state
            // only makes sure it never ends twice.
            if (try? life.withLock { try $0.receivedClose() }) != nil { inboundContinuation.yield(.end) }
        case let .reset(reset):
            // The link's table let it go already (LinkChannels.route).
            lost(.peerReset(String(reset.reason.prefix(FrameBody.maxReasonBytes))))
        case .open, .start:
            break
        }
    }

    /// The session ended or the peer reset the stream: both directions stop at once.
    func lost(_ cause: StreamLife.Cause) {
        _ = life.withLock { $0.cut(cause) }
        inboundContinuation.yield(.reset(cause))
        inboundContinuation.finish()
        credit.close()
        replyContinuation.finish()
    }
}

extension StreamChannel {
    package func received(_ message: ChannelMessage, on port: any ChannelPort) async throws(ProtocolViolation) {
        received(message)
    }

    package func linkEnded(_ reason: CloseReason) { lost(.sessionEnded("\(reason)")) }
}
