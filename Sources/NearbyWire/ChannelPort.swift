import NIOCore
import NearbyBase

/// What a file or a stream needs of the connection its channel runs on (a `Link`): send its
/// frames, give window back, end the channel, and the link's share of the process's open files.
/// What runs on a channel (`ChannelEnd`) knows no more of a link than this.
package protocol ChannelPort: AnyObject, Sendable {
    var peer: AuthenticatedPeer { get }
    /// What the link holds of the process's `ResourceBudget`.
    var account: ResourceBudget.Account { get }
    func send(_ frame: Frame) async
    /// Frames written together: one flush (a small file's start, data and close).
    func send(contentsOf frames: [Frame]) async
    /// `count` bytes of `chunk` as data frames on `channel`, written together.
    func sendData(_ chunk: inout ByteBuffer, count: Int, on channel: UInt32) async
    /// `count` bytes of the peer's data on `channel` were consumed: window back, when worth a frame.
    func consumed(_ count: Int, on channel: UInt32) async
    /// The channel is over: later frames on it are ignored.
    func endChannel(_ id: UInt32)
    /// A received file's end, told to its sender: the confirming `close`, or a `reset` with why. A
    /// bundle's files (`BundleReceiver`) answer in result records instead.
    func confirm(_ close: FrameBody.Close, on channel: UInt32) async
    func reset(_ reset: FrameBody.Reset, on channel: UInt32) async
}

extension ChannelPort {
    package func confirm(_ close: FrameBody.Close, on channel: UInt32) async { await send(FrameBody.frame(.close, close, channel: channel)) }
    package func reset(_ reset: FrameBody.Reset, on channel: UInt32) async { await send(FrameBody.frame(.reset, reset, channel: channel)) }

    /// The sender was cancelled (Ctrl-C): the receiver hears it from a task that is not cancelled
    /// itself, so the frame still goes out.
    package func tellCancelled(on channel: UInt32) async {
        await Task { await send(FrameBody.frame(.reset, FrameBody.Reset(reason: "the sender cancelled", code: .cancelled), channel: channel)) }.value
    }
}

/// What runs on one channel of a link — a file we send or receive, a bundle, a stream (Transfer's
/// types): the link routes the peer's frames for that channel here, from its own task, and says
/// when it is gone. The link knows no more of what runs on its channels than this.
package protocol ChannelEnd: AnyObject, Sendable {
    /// A frame of the peer on this channel; a frame that has no place here is a violation.
    func received(_ message: ChannelMessage, on port: any ChannelPort) async throws(ProtocolViolation)
    /// The link is gone, for `reason`: what was under way ends with it.
    func linkEnded(_ reason: CloseReason)
}
