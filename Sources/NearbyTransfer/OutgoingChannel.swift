import NIOCore
import Crypto
import Foundation
import Synchronization
import NearbyBase
import NearbyWire

/// What the receiver says about a file we send: answers, flow-control credit, the end.
package final class OutgoingChannel: ChannelEnd {
    enum Signal: Sendable {
        case reply(FrameBody.OpenReply)
        case closed(FrameBody.Close)
        case reset(FrameBody.Reset)
        case lost(String)
        /// A bundle's result records (`Bundle`): data from the receiver, on a bundle's channel only.
        case data(ByteBuffer)
    }

    let id: UInt32
    /// Answers and the end: a handful per channel (the multiplexer refuses repeats).
    let signals: AsyncStream<Signal>
    let continuation: AsyncStream<Signal>.Continuation
    /// What the receiver lets us send, summed however many window frames it sends.
    let credit = SendCredit(initial: Transfer.window)
    /// A bundle's channel: the receiver answers in data (result records).
    let results: Bool

    init(id: UInt32, results: Bool = false) {
        self.id = id
        self.results = results
        (signals, continuation) = AsyncStream<Signal>.makeStream()
    }

    /// The receiver's answers on the file we send, from the link's task.
    func received(_ message: ChannelMessage) throws(ProtocolViolation) {
        switch message {
        case let .openReply(reply):
            continuation.yield(.reply(reply))
        case let .window(more):
            credit.add(Int(more))
        case let .close(close):
            continuation.yield(.closed(close))
        case let .reset(reset):
            continuation.yield(.reset(reset))
            credit.close()
        case let .data(bytes) where results:
            continuation.yield(.data(bytes))
        case .open, .start, .data:
            throw .unexpected("\(message.kind) on our own channel \(id)")
        }
    }

    /// The link went: the sender stops waiting for credit or an answer.
    func lost(_ reason: String) {
        continuation.yield(.lost(reason))
        credit.close()
    }
}

extension OutgoingChannel {
    package func received(_ message: ChannelMessage, on port: any ChannelPort) async throws(ProtocolViolation) {
        try received(message)
    }

    package func linkEnded(_ reason: CloseReason) { lost("\(reason)") }
}
