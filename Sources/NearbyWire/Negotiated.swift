import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import NearbyBase

/// A connection after the preamble: frames in both directions, over TLS or not.
package struct FrameChannel: Sendable {
    package let channel: NIOAsyncChannel<Frame, Frame>
    package let encrypted: Bool
    package let remote: String
    /// The public key (SPKI DER) the peer's TLS certificate carries; nil without TLS. Filled in by
    /// the TLS verification callback, read after the handshake.
    let certificateKey: Locked<[UInt8]?>
    /// Message frames of the session, delivered on the event loop once the node arms it.
    let shortcut: MessageShortcut
    /// The place this incoming connection holds among links that are not sessions (`Admission`),
    /// given back when it becomes a session or closes.
    var admission: Admission.Ticket? = nil
    /// When the TCP connection was made: the preamble, TLS and the identity handshake all end
    /// within `Handshake.deadline` of it, however slowly the bytes come.
    var started = NIODeadline.now()
}

/// What the preamble leads to.
package enum Negotiated: Sendable {
    case frames(FrameChannel)
    /// Not a nearby peer (an MPC app, a port scanner): closed.
    case foreign(remote: String, what: String)
    /// A nearby peer whose encryption preference is incompatible with ours: closed.
    case refused(remote: String, theirs: EncryptionPreference?, decision: Preamble.Decision)
    /// A client that connected and closed without sending a byte (a TCP reachability check such as
    /// `nearby doctor`'s, or a port scan): nothing to report.
    case silent(remote: String)
}

extension Negotiated {
    /// The connection's frames once the preamble agreed; otherwise nil, and what happened is said
    /// (a `rejected` event, or a debug line for a client that closed without a word).
    package func frames(ours: EncryptionPreference, reporting events: any EventSink) -> FrameChannel? {
        switch self {
        case let .frames(frames):
            return frames
        case let .silent(remote):
            NearbyLog.logger.debug("\(remote) connected and closed without a word (a reachability check or a scan)")
        case let .foreign(remote, what):
            events.emit(Events.Rejected(address: remote, reason: "not a nearby peer: \(what)", code: "not-a-nearby-peer"))
        case let .refused(remote, theirs, decision):
            let error = Preamble.mismatch(ours: ours, theirs: theirs, decision: decision)
            events.emit(Events.Rejected(address: remote, reason: error.errorDescription ?? "", code: error.code))
        }
        return nil
    }
}
