/// Why a link ended, as the first one to know said it (grpc-swift-2's `Connection.CloseReason`):
/// the `disconnected` event's `reason`, and what the files and streams on the link are told. The
/// words are docs/events.md's "Close reasons".
package enum CloseReason: Sendable, Equatable, CustomStringConvertible {
    /// We left on purpose (`disconnect`, Ctrl-C, the command's work done): `we left: <why>`. A file
    /// coming in is cancelled here, not lost.
    case weLeft(String)
    /// The node stopped under the link.
    case nodeStopped
    /// A write to the peer failed: the socket broke under the send.
    case sendFailed
    /// The peer broke the protocol: what it did.
    case violation(String)
    /// The connection ended with nobody saying why.
    case lost
    /// The peer said goodbye (`peer left: <why>`): it left on purpose — Ctrl-C, `disconnect`, its
    /// node stopping — so a transfer cut by it is not tried again (a peer that vanishes is).
    case peerLeft(String)
    /// Anything else, in its own words: the peer left, went silent, declined; a newer connection
    /// replaced it; it never invited…
    case ended(String)

    package var description: String {
        switch self {
        case let .weLeft(why): "we left: \(why)"
        case .nodeStopped: "the node stopped"
        case .sendFailed: "the connection failed while sending"
        case let .violation(what): "protocol violation: \(what)"
        case .lost: "connection lost"
        case let .ended(words): words
        case let .peerLeft(words): words
        }
    }

    /// The reason that stands when `next` comes after `current`: the first one to know says why,
    /// except that a goodbye read after the connection broke under a write explains the break (the
    /// peer said goodbye and closed while we were still sending: it left on purpose, it did not vanish).
    static func settled(_ current: CloseReason?, then next: CloseReason) -> CloseReason {
        guard let current else { return next }
        switch (current, next) {
        case (.sendFailed, .peerLeft), (.lost, .peerLeft): return next
        default: return current
        }
    }

    /// Whether we ended it ourselves, on purpose: what arrives is cancelled here, not lost.
    package var isOurLeaving: Bool {
        if case .weLeft = self { return true }
        return false
    }
}
