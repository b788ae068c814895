import NearbyBase
import NearbyWire
/// The node's answer to an invitation a peer sent, as `SessionStateMachine` does it: what the node
/// knows at that moment goes in (`Facts`), actions come out, every rule one guard, in order. Pure:
/// tested by feeding it facts by hand, without sockets (`InvitationPolicyTests`); the node carries
/// out the actions (`InvitationDesk.invited`).
struct InvitationPolicy {
    /// What the node knows when the invitation arrives.
    struct Facts: Equatable {
        /// Another link is in a live session with this peer (heard within `duplicateSilence`).
        var liveSessionElsewhere = false
        /// Our own invitation to this peer waits for its answer: the two crossed.
        var ourInvitationWaiting = false
        /// Of two crossed invitations, ours wins (`SessionMath.keepsOwnInvitation`).
        var oursWins = false
        /// Another link's invitation already has this ID (the inviter chooses it).
        var idInUse = false
        /// `--accept-from` names the peer.
        var friend = false
        /// `--auto-accept`.
        var autoAccept = false
        /// Who set the accepting policy, for the `by` of `accepted` (`NodeConfiguration.acceptedBy`).
        var acceptedBy: String?
        /// A `nearby accept` waits for an invitation from this peer.
        var acceptWaiting = false
    }

    enum Action: Equatable {
        /// Decline on the link, no invitation event: `reason` to the peer, `closing` ours.
        case decline(reason: String, closing: String)
        /// Keep the invitation pending for `lifetime` seconds and show its `invitation` event
        /// (`answeredBy`: who answers it at once, if anyone).
        case hold(lifetime: Double, answeredBy: String?)
        /// The link was let in by `--auto-accept`: its peer is pinned as a stranger.
        case markAutoAccepted
        case accept(by: String)
        /// The waiting `nearby accept` takes it (and accepts or declines, as it was told).
        case answerWaiter
        /// Nobody answers yet: stream listeners waiting for this peer show it, with how to accept.
        case showListeners
        /// Unanswered after `seconds`: it expires (declined, the link closed).
        case expire(after: Double)
    }

    /// A session that has gone silent this long is taken for dead: a new invitation replaces it.
    static let duplicateSilence = Duration.seconds(2)

    /// The longest and shortest an invitation waits for its answer, whatever the inviter asks.
    static let lifetimes: ClosedRange<Double> = 1...300

    static func decide(timeout: Double, _ facts: Facts) -> [Action] {
        // Already in a live session with this peer (its invitation crossed ours and lost the race):
        // nothing to ask anyone. A silent session is replaced instead (the peer restarted).
        if facts.liveSessionElsewhere {
            return [.decline(reason: SessionStateMachine.alreadyInSession, closing: "duplicate connection: already in session")]
        }
        // Two nodes inviting each other at once end up in one session: the smaller ID's invitation wins.
        if facts.ourInvitationWaiting {
            if facts.oursWins { return [.decline(reason: "crossed", closing: "crossed invitations: ours wins")] }
            return [.hold(lifetime: 0, answeredBy: "crossed invitations"), .accept(by: "crossed invitations")]
        }
        if facts.idInUse { return [.decline(reason: "invitation ID in use", closing: "invitation ID already pending")] }
        let lifetime = min(max(timeout, lifetimes.lowerBound), lifetimes.upperBound)
        // Who answers at once is decided before the event: an invitation answered in the same
        // moment is not shown as one waiting for `nearby accept`. A friend is pinned for good;
        // `--auto-accept` lets in a stranger.
        if facts.friend {
            let by = facts.acceptedBy ?? Spelling.option(.acceptFrom)
            return [.hold(lifetime: lifetime, answeredBy: by), .accept(by: by)]
        }
        if facts.autoAccept {
            let by = facts.acceptedBy ?? Spelling.option(.autoAccept)
            return [.hold(lifetime: lifetime, answeredBy: by), .markAutoAccepted, .accept(by: by)]
        }
        if facts.acceptWaiting { return [.hold(lifetime: lifetime, answeredBy: Spelling.command(.accept)), .answerWaiter] }
        return [.hold(lifetime: lifetime, answeredBy: nil), .showListeners, .expire(after: lifetime)]
    }
}
