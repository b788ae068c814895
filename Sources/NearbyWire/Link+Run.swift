import NIOCore
import NIOSSL
import NearbyBase
import NearbyIdentity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a link hands to the node that owns it: the decisions that span links (invitations, the
/// session index, policy for offers, events). The link runs everything else itself — its frame
/// loop, keepalive, answers, channels and goodbye — and never touches the node's tables.
package protocol LinkOwner: Sendable {
    /// The peer invites us: policies, waiting `accept`s, crossed invitations.
    func invited(_ invite: FrameBody.Invite, on link: Link) async
    /// The session began (either side): index it, set up datagrams.
    func connected(_ link: Link) async
    /// The peer declined our invitation on this link.
    func declined(on link: Link, reason: String) async
    /// Our invitation crossed the peer's, whose wins: the session arrives on its connection.
    func crossed(on link: Link) async
    /// A message the peer sent in session (one the `MessageShortcut` did not deliver).
    func message(_ bytes: [UInt8], on link: Link)
    /// The peer's datagram setup.
    func datagramSetup(_ setup: FrameBody.Datagrams, on link: Link)
    /// `nearby doctor` asks whether this host sees its probe.
    func probed(_ probe: FrameBody.Probe, on link: Link) async
    /// The peer offers a channel (a file, a directory, a stream): the node's policy decides.
    func offered(_ offer: FrameBody.Open, channel: UInt32, on link: Link) async
    /// The peer broke the protocol: said once, as an `error` event, before the link is cut.
    func violated(_ link: Link, _ what: String)
    /// The link is over (`Link.run(connection:)` is about to return its reason): forget it.
    func detached(_ link: Link) async
}

extension Link {
    /// What the identity handshake needs: who we are, whom we expect, whom we know.
    package struct Parties: Sendable {
        let identity: Identity
        let displayName: String
        /// The peer we dialled, when we know its ID (the handshake fails if another answers).
        let expected: PeerID?
        let knownPeers: KnownPeers

        package init(identity: Identity, displayName: String, expected: PeerID?, knownPeers: KnownPeers) {
            self.identity = identity
            self.displayName = displayName
            self.expected = expected
            self.knownPeers = knownPeers
        }
    }

    /// A connection's whole life after the preamble, as grpc-swift-2's `Connection.run()`: the
    /// identity handshake, then the link — handed to `attached` (the owner indexes it, sends its
    /// invitation) — its frames and keepalive until the connection ends, inside `executeThenClose`,
    /// which closes the connection whatever happens. Returns why the link ended, once `owner` has
    /// let it go (`detached`). Throws only when no link came of it (the handshake failed, the node
    /// stopped first): then nobody ever heard of it.
    package static func run(
        connection: FrameChannel, isClient: Bool, parties: Parties, owner: some LinkOwner, attached: (Link) async -> Void
    ) async throws -> CloseReason {
        var established: Link?
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                let peer = try await Handshake.run(
                    inbound: &iterator, outbound: outbound, connection: connection, isClient: isClient,
                    identity: parties.identity, displayName: parties.displayName, expected: parties.expected,
                    knownPeers: parties.knownPeers)
                let link = Link(
                    peer: peer, isClient: isClient, outbound: outbound, transport: connection.channel.channel,
                    shortcut: connection.shortcut, owner: owner, admission: connection.admission)
                established = link
                await attached(link)
                await link.run(&iterator, owner: owner)
            }
        } catch {
            guard let established else { throw error }
            established.setReason(Task.isCancelled ? .nodeStopped : .ended(describe(error)))
        }
        guard let link = established else { throw CancellationError() }
        await owner.detached(link)
        return link.closeReason ?? .lost
    }
}

extension Link {
    /// The link's whole life after the handshake, as grpc-swift-2's `Connection.run()`: the peer's
    /// frames, decoded once (`WireMessage`) and taken by the link's state machine, and the
    /// keepalive, in one task group; what only the node can decide goes to `owner`. When the
    /// connection ends, so does everything that ran on it (`endChannels`), before this returns.
    private func run(_ inbound: inout NIOAsyncChannelInboundStream<Frame>.AsyncIterator, owner: some LinkOwner) async {
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await Keepalive.run(self) }
                while let message = try await inbound.nextMessage() {
                    heard()
                    try await received(message, owner: owner)
                    shortcut.handled()
                }
                group.cancelAll()
            }
        } catch {
            if let violation = error as? ProtocolViolation { owner.violated(self, "\(violation)") }
            setReason(Task.isCancelled ? .nodeStopped : .ended(Self.describe(error)))
        }
        // Nothing more goes out, and what ran on the connection ends with it. From here on the
        // link is closed for everyone who asks (`closeReason`), before the node detaches it.
        setReason(.lost)
        transport.close(promise: nil)
        endChannels()
    }

    /// A frame from the peer: answers and channel frames are the link's own; only what the node
    /// decides (invitations, the session's start, messages) goes to it.
    func received(_ message: WireMessage, owner: some LinkOwner) async throws {
        let (actions, connected) = try session.withLock { machine in (try machine.received(message), machine.state == .connected) }
        if !connected { shortcut.disarm() }
        if case .goodbye = message {
            // The machine closes with the peer's words; the reason says the peer left on purpose.
            for action in actions {
                if case let .close(reason) = action { await finish(because: .peerLeft(reason)) } else { await perform([action], owner: owner) }
            }
            return
        }
        await perform(actions, owner: owner)
    }

    /// Carries out what the link's state machine decided.
    func perform(_ actions: [SessionStateMachine.Action], owner: some LinkOwner) async {
        if actions.contains(.connected) { shortcut.phase.begin() }  // before our accepting answer goes out
        for action in actions {
            switch action {
            case let .send(frame): await send(frame)
            case let .invitation(invite): await owner.invited(invite, on: self)
            case .connected: await owner.connected(self)
            case let .datagrams(setup): owner.datagramSetup(setup, on: self)
            case let .probe(probe): await owner.probed(probe, on: self)
            case let .declined(_, reason): await owner.declined(on: self, reason: reason)
            case .crossed: await owner.crossed(on: self)
            case let .message(bytes): owner.message(bytes, on: self)
            case let .channel(id, message): await channel(id, message, owner: owner)
            case let .close(reason): await finish(because: .ended(reason))
            }
        }
    }

    /// A frame on a channel above 0: the link's table says what runs there. The side that opened a
    /// channel sends open, start, data and the first close; the other answers with openReply,
    /// window and the confirming close or a reset.
    func channel(_ id: UInt32, _ message: ChannelMessage, owner: some LinkOwner) async {
        do throws(ProtocolViolation) {
            switch try channels.route(id, message) {
            case .ignore: return
            case let .refuse(answer): await send(answer)
            case let .offer(id, offer): await owner.offered(offer, channel: id, on: self)
            case let .deliver(end, message): try await end.received(message, on: self)
            }
        } catch {
            owner.violated(self, "\(error)")
        }
    }

    /// The connection is gone: everything it carried ends with it. Incoming files fail (partial files
    /// stay for a resume), senders and streams stop.
    private func endChannels() {
        let reason = closeReason ?? .lost
        for end in channels.drop() { end.linkEnded(reason) }
    }
}

extension Link {
    /// What ended a connection, in words for events.
    package static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NearbyError: error.errorDescription ?? "\(error)"
        case let error as ProtocolViolation: "protocol violation: \(error)"
        case let error as HandshakeFailure: "\(error)"
        case NIOSSLError.uncleanShutdown: "connection lost (closed without a goodbye)"
        case let error as NIOSSLError: ErrorWords.describe(error)
        case is ChannelError: "connection lost"
        // The system's words ("Connection reset by peer"), not NIO's call and errno.
        case let error as IOError: "connection lost (\(String(cString: strerror(error.errnoCode))))"
        case is CancellationError: "the node stopped"
        default: "connection lost (\(ErrorWords.describe(error)))"
        }
    }
}
