import NIOCore
import NearbyBase
import NearbyWire

/// What a link hands to its node (`LinkOwner`): the decisions that span links. The link runs its
/// own frame loop, answers and channels (`Link.run`); these are the only ways back into the node.
extension Node: LinkOwner {
    package func connected(_ link: Link) async {
        connect(link)
        await datagrams.connected(link)
    }

    package func invited(_ invite: FrameBody.Invite, on link: Link) async { await invitations.invited(invite, on: link) }

    package func declined(on link: Link, reason: String) { invitations.declined(on: link, reason: reason) }

    package func crossed(on link: Link) async { await invitations.crossed(on: link) }

    package nonisolated func message(_ bytes: [UInt8], on link: Link) {
        events.emit(Events.Message(bytes, from: link.peer.ref))
    }

    package nonisolated func datagramSetup(_ setup: FrameBody.Datagrams, on link: Link) {
        datagrams.peerSetup(setup, on: link)
    }

    /// Files and directories by the node's policy (`FileIntake`, which needs nothing of the actor: a
    /// folder's offers never wait for it), streams to a listener.
    package nonisolated func offered(_ offer: FrameBody.Open, channel: UInt32, on link: Link) async {
        if offer.kind == .stream {
            await streamOffered(offer, channel: channel, on: link)
        } else {
            if !link.handedOver.load(ordering: .acquiring) { await handOver(to: link) }
            await intake.fileOffered(offer, channel: channel, on: link)
        }
    }

    private func streamOffered(_ offer: FrameBody.Open, channel: UInt32, on link: Link) async {
        await streams.offered(offer, channel: channel, on: link)
    }

    /// A peer broke the protocol: an `error` event says so, and the link is cut at once.
    package nonisolated func violated(_ link: Link, _ what: String) { Self.violated(link, what, events: events) }

    static func violated(_ link: Link, _ what: String, events: any EventSink) {
        guard !link.isClosing else { return }
        let failure = NearbyError.connectionFailed("\(link.peer.id) (\(link.peer.name)) broke the protocol: \(what)")
        events.emit(Events.Failure(code: "protocol-violation", message: failure.errorDescription ?? what, exitStatus: failure.exitStatus.rawValue))
        link.close(because: .violation(what))
    }

    /// Says goodbye on a link and closes it once everything queued is written (`Sessions.leave`).
    func leave(_ link: Link, because why: CloseReason, telling reason: String) async {
        await sessions.leave(link, because: why, telling: reason)
    }
}
