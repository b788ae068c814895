import NIOCore
import Synchronization

/// What each frame type may be, checked from its 9-byte header before one byte of its payload is
/// held (docs/protocol.md, section 4; docs/security.md). A stranger who has not reached a session
/// can make a node hold at most one frame with a JSON body (16 KiB) per connection, never a 1 MiB one.
extension Frame.Kind {
    /// The largest payload this type may carry.
    package var maxPayload: Int {
        switch self {
        case .message, .data: Frame.maxPayload
        case .ping, .pong, .window: Frame.maxTinyPayload
        case .hello, .auth, .invite, .answer, .goodbye, .probe, .probeReply,
             .open, .openReply, .start, .close, .reset, .datagrams:
            Frame.maxBodyPayload
        }
    }

    /// Whether the type may arrive before a session began: the handshake, the invitation and its
    /// answer, a doctor's probe, keepalives and a goodbye. Messages, datagram setup and every
    /// channel frame only come once the invitation was accepted.
    package var allowedBeforeSession: Bool {
        switch self {
        case .hello, .auth, .invite, .answer, .goodbye, .probe, .probeReply, .ping, .pong: true
        case .message, .datagrams, .open, .openReply, .start, .data, .window, .close, .reset: false
        }
    }
}

extension Frame {
    /// Ping, pong and window: empty, or 4 bytes.
    package static let maxTinyPayload = 64
}

/// Whether a connection's session has begun, shared by the node (which begins it before it sends
/// an accepting answer) and the `FrameSplitter` (which begins it on the client's side when the
/// answer arrives, and refuses in-session frame types from their header before that). Never ends:
/// a session that ends closes its connection.
final class SessionPhase: Sendable {
    private let begun: Atomic<Bool>

    init(inSession: Bool = false) { begun = Atomic(inSession) }

    var inSession: Bool { begun.load(ordering: .acquiring) }

    func begin() { begun.store(true, ordering: .releasing) }
}
