import Foundation
import NIOCore
import NearbyBase

/// What happens on one authenticated connection, as a pure state machine: frames and local decisions
/// go in, actions come out. It knows the protocol's rules for a single link (one invitation per
/// connection, messages only in a session, answers only to our own invitation); the node decides
/// what spans links (crossed invitations, policies, who answers).
package struct SessionStateMachine: Sendable {
    package enum State: Equatable, Sendable {
        case awaitingInvite
        case inviting(String)
        case invited(String)
        case connected
        /// `nearby doctor` asked its one probe on this link: it answers and closes, never a session.
        case probed
        case closed
    }

    package enum Action: Equatable, Sendable {
        case send(Frame)
        /// The peer invites us: the node decides (policy, `nearby accept`, crossed invitations).
        case invitation(FrameBody.Invite)
        /// The session began.
        case connected
        /// The peer declined our invitation.
        case declined(invitation: String, reason: String)
        /// The peer declined ours because its own invitation to us wins: the session arrives on the
        /// other connection.
        case crossed
        case message([UInt8])
        /// A frame of a file (or stream) channel, for the link's channel table.
        case channel(UInt32, ChannelMessage)
        /// The peer's datagram setup (its UDP port, tag and sending key), for unreliable messages.
        case datagrams(FrameBody.Datagrams)
        /// `nearby doctor` asks whether this host sees its DNS-SD probe (docs/protocol.md).
        case probe(FrameBody.Probe)
        /// Close the connection; `reason` is what our events say.
        case close(reason: String)
    }

    package private(set) var state = State.awaitingInvite

    /// The answer to an invitation from a peer we are already in a live session with.
    package static let alreadyInSession = "already in session"

    /// Whether the peer opened this connection: only such a link may carry a probe.
    package let inbound: Bool

    package init(inbound: Bool = true) { self.inbound = inbound }

    /// Client side: send our invitation.
    package mutating func invite(id: String, context: String?, timeout: Double, offer: Offer? = nil) -> [Action] {
        guard state == .awaitingInvite else { return [] }
        state = .inviting(id)
        return [.send(FrameBody.frame(.invite, FrameBody.Invite(invitation: id, context: context, timeout: timeout, offer: offer)))]
    }

    /// Server side: answer the invitation we were given.
    package mutating func answer(accept: Bool, reason: String? = nil, closing closeReason: String = "we declined the invitation") -> [Action] {
        guard case let .invited(id) = state else { return [] }
        let frame = FrameBody.frame(.answer, FrameBody.Answer(invitation: id, accept: accept, reason: accept ? nil : reason ?? "declined"))
        if accept {
            state = .connected
            return [.send(frame), .connected]
        }
        state = .closed
        return [.send(frame), .close(reason: closeReason)]
    }

    /// Either side: leave with a goodbye.
    package mutating func leave(telling reason: String) -> [Action] {
        guard state != .closed else { return [] }
        state = .closed
        return [.send(FrameBody.frame(.goodbye, FrameBody.Goodbye(reason: reason)))]
    }

    package mutating func received(_ message: WireMessage) throws -> [Action] {
        guard state != .closed else { return [] }
        switch message {
        case .ping:
            return [.send(Frame(kind: .pong))]
        case .pong:
            return []
        case let .goodbye(goodbye):
            state = .closed
            return [.close(reason: "peer left: \(String(goodbye.reason.prefix(FrameBody.maxReasonBytes)))")]
        case let .invite(invite):
            guard state == .awaitingInvite else { throw ProtocolViolation.unexpected("invitation in state \(state)") }
            guard !invite.invitation.isEmpty, invite.invitation.utf8.count <= 64,
                  (invite.context?.utf8.count ?? 0) <= FrameBody.maxContextBytes,
                  invite.timeout.isFinite
            else { throw ProtocolViolation.malformed("invite frame") }
            state = .invited(invite.invitation)
            return [.invitation(invite)]
        case let .answer(answer):
            guard case let .inviting(id) = state, id == answer.invitation else {
                throw ProtocolViolation.unexpected("answer to an invitation we did not send")
            }
            if answer.accept {
                state = .connected
                return [.connected]
            }
            let reason = String((answer.reason ?? "declined").prefix(FrameBody.maxReasonBytes))
            state = .closed
            if reason == "crossed" || reason == Self.alreadyInSession {
                return [.crossed, .close(reason: "crossed invitations: the peer's wins")]
            }
            return [.declined(invitation: id, reason: reason), .close(reason: "invitation declined: \(reason)")]
        case let .message(bytes):
            guard state == .connected else { throw ProtocolViolation.unexpected("message before the session was accepted") }
            return [.message(Array(bytes.readableBytesView))]
        case let .datagrams(setup):
            guard state == .connected else { throw ProtocolViolation.unexpected("datagrams frame before the session was accepted") }
            guard setup.checked != nil else { throw ProtocolViolation.malformed("datagrams frame") }
            return [.datagrams(setup)]
        case let .probe(probe):
            // One probe, instead of an invitation, on a link the peer opened; anywhere else (twice,
            // after an invitation, in a session, on our own connection) it breaks the protocol.
            guard inbound, state == .awaitingInvite else { throw ProtocolViolation.unexpected("probe in state \(state)") }
            guard probe.isValid else { throw ProtocolViolation.malformed("probe frame") }
            state = .probed
            return [.probe(probe)]
        case .probeReply:
            throw ProtocolViolation.unexpected("probe reply (nodes never send probes)")
        case .hello, .auth:
            throw ProtocolViolation.unexpected("\(message.kind) frame after the handshake")
        case let .channel(id, channel):
            guard state == .connected else { throw ProtocolViolation.unexpected("\(channel.kind) frame before the session was accepted") }
            guard id != 0 else { throw ProtocolViolation.unexpected("\(channel.kind) frame on channel 0") }
            return [.channel(id, channel)]
        }
    }

    /// The keepalive's decision after `silence` without hearing anything: ping, or give up.
    /// With a ping every second and a limit of 6 s, a vanished peer is noticed within 7 s.
    package static func keepalive(silence: Duration, limit: Duration = .seconds(6)) -> Action {
        silence > limit
            ? .close(reason: "connection lost (nothing heard for \(limit.components.seconds) s)")
            : .send(Frame(kind: .ping))
    }
}
