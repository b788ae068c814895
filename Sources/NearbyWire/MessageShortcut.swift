import NIOCore
import NearbyBase

/// Delivers the message frames of a session in progress on the event loop, where they were read:
/// no trip through the async channel and the node actor for each one (two task switches and a
/// state-machine turn that, for a 64-byte message, cost more than the TLS record and the frame).
///
/// Only while it is safe to: the node arms it once the session is connected and disarms it when
/// the session ends, and a message takes the shortcut only while every frame passed up before it
/// has been handled by the node. So events keep the order of the frames on the wire, a message
/// before `connected` or after a goodbye still reaches the state machine (which refuses it), and
/// the async channel's back-pressure still applies to everything that goes up.
final class MessageShortcut: Sendable {
    private struct State {
        var deliver: (@Sendable ([UInt8]) -> Void)?
        /// Frames passed up to the node and not yet handled by it (handshake frames are not counted:
        /// the handshake reads them itself).
        var pending = 0
    }

    private let state = Locked(State())
    /// Whether the connection's session began (the `FrameSplitter` refuses in-session frames before).
    let phase = SessionPhase()
    /// Whether the `FrameSplitter` holds the connection's reads now (the keepalive asks).
    let pacing = ReadPacing()
    /// The bytes of the frames passed up and not yet handled, charged to the link (`ReadThrottle`).
    let waiting: WaitingFrames

    init(waiting: WaitingFrames = WaitingFrames()) { self.waiting = waiting }

    /// From now on, messages that may take the shortcut go to `deliver`, on the event loop.
    func arm(_ deliver: @escaping @Sendable ([UInt8]) -> Void) {
        state.withLock { $0.deliver = deliver }
    }

    func disarm() {
        state.withLock { $0.deliver = nil }
    }

    /// The node has handled one frame it read after the handshake.
    func handled() {
        state.withLock { $0.pending -= 1 }
        waiting.handled()
    }

    /// On the event loop, for each frame read: true when `frame` was delivered here, false when
    /// it must go up to the node.
    func take(_ frame: Frame) -> Bool {
        let deliver: (@Sendable ([UInt8]) -> Void)? = state.withLock { state in
            if frame.kind == .message, state.pending == 0, let deliver = state.deliver { return deliver }
            if Self.counts(frame) { state.pending += 1 }
            return nil
        }
        guard let deliver else {
            if Self.counts(frame) { waiting.wentUp(frame) }
            return false
        }
        deliver(Array(frame.payload.readableBytesView))
        return true
    }

    /// Whether the node's `handled()` will be called for this frame: every frame but the handshake's.
    static func counts(_ frame: Frame) -> Bool { frame.kind != .hello && frame.kind != .auth }
}

/// The pipeline end of `MessageShortcut`: between the frame decoder and the async channel.
final class MessageShortcutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame

    private let shortcut: MessageShortcut

    init(_ shortcut: MessageShortcut) { self.shortcut = shortcut }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if shortcut.take(Self.unwrapInboundIn(data)) { return }
        context.fireChannelRead(data)
    }
}
