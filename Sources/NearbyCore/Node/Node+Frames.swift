import NIOCore

/// The peer's frames on a link, and what a link's state machine decides: answers and channel frames
/// stay with the link (its own task); invitations, the session's start and messages go to the node.
extension Node {
    /// A frame from the peer, on the link's own task: answers and channel frames are handled here,
    /// by the link; only what the node decides (invitations, the session's start, messages) goes to it.
    nonisolated func received(_ message: WireMessage, on link: Link) async throws {
        let (actions, connected) = try link.session.withLock { machine in (try machine.received(message), machine.state == .connected) }
        if !connected { link.shortcut.disarm() }
        guard actions.allSatisfy(\.isTheLinks) else { return await perform(actions, on: link) }
        for action in actions {
            switch action {
            case let .send(frame): await link.send(frame)
            case let .channel(id, message): await channel(id, message, on: link)
            default: break
            }
        }
    }

    nonisolated func channel(_ id: UInt32, _ message: ChannelMessage, on link: Link) async {
        do {
            try await channelFrame(id, message, on: link)
        } catch {
            violated(link, "\(error)")
        }
    }

    /// Carries out what a link's state machine decided.
    func perform(_ actions: [SessionStateMachine.Action], on link: Link) async {
        if actions.contains(.connected) { link.shortcut.phase.begin() }  // before our accepting answer goes out
        for action in actions {
            switch action {
            case let .send(frame):
                await link.send(frame)
            case let .invitation(invite):
                await invited(invite, on: link)
            case .connected:
                connect(link)
                await datagramsConnected(link)
            case let .datagrams(setup):
                datagrams.peerSetup(setup, on: link)
            case let .probe(probe):
                probed(probe, on: link)
            case let .declined(_, reason):
                if let pending = invitations.outgoing[link.peer.id], pending.link === link {
                    invitations.outgoing[link.peer.id] = nil
                    pending.outcome.settle(.declined(reason))
                }
            case .crossed:
                // Our session with this peer arrives on its connection: keep waiting for that, and
                // accept its invitation if it is already here.
                if let pending = invitations.outgoing[link.peer.id], pending.link === link { pending.link = nil }
                _ = await acceptPendingInvitation(from: link.peer.id, client: nil)
            case let .message(bytes):
                events.emit(Events.Message(bytes, from: link.peer.ref))
            case let .channel(id, message):
                await channel(id, message, on: link)
            case let .close(reason):
                await link.finish(because: reason)
            }
        }
    }

    /// Says goodbye on a link and closes it once everything queued is written. Bounded: the goodbye
    /// waits at most half a second for room, for a peer that stopped reading.
    func leave(_ link: Link, because why: String, telling reason: String) async {
        guard links.contains(link) else { return }
        // Before the goodbye goes out: a peer that closes at once must not make it "connection lost".
        link.setReason(why)
        let actions = link.step { $0.leave(telling: reason) }
        link.shortcut.disarm()
        for case let .send(frame) in actions {
            let sent = OneShot<Void>()
            spawn {
                await link.send(frame)
                sent.settle(())
            }
            _ = await sent.wait(until: .now + .milliseconds(500))
        }
        await link.finish(because: why)
    }

    /// A peer broke the protocol: an `error` event says so, and the link is cut at once.
    nonisolated func violated(_ link: Link, _ what: String) {
        guard link.closeReason == nil else { return }
        let failure = NearbyError.connectionFailed("\(link.peer.id) (\(link.peer.name)) broke the protocol: \(what)")
        events.emit(Events.Failure(code: "protocol-violation", message: failure.errorDescription ?? what, exitStatus: failure.exitStatus.rawValue))
        link.close(because: "protocol violation: \(what)")
    }
}

extension SessionStateMachine.Action {
    /// Handled by the link itself: an answer to send, a frame of one of its channels.
    var isTheLinks: Bool {
        switch self {
        case .send, .channel: true
        default: false
        }
    }
}
