import Foundation
import NearbyBase
import NearbyDiscovery
import NearbyWire
import NearbyTransfer

/// What the commands ask of the node, each passed to the owner that does it: invitations to the
/// `InvitationDesk`, streams to the `StreamMatchmaker`; leaving sessions is the node's own.
extension Node {
    /// Invites a peer and waits for the answer. Already connected: returns at once. A remembered
    /// address is tried first while discovery runs; when it leads nowhere the invitation is tried
    /// again with discovery alone (`InviteAttempts`).
    package func invite(
        _ query: String, context: String?, offer: Offer? = nil, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer {
        if let context, context.utf8.count > FrameBody.maxContextBytes {
            throw .invalidArgument("the invitation context is \(context.utf8.count) bytes; the maximum is \(FrameBody.maxContextBytes)")
        }
        try await refuseSelf(query)
        return try await invitations.invite(query, context: context, offer: offer, timeout: timeout, deadline: .now + .seconds(timeout), client: client)
    }

    /// Answers an invitation (by ID, by peer, or the oldest pending), or waits for the next one that
    /// matches (`InvitationDesk.accept`). Returns the peer now in session, or nil when we declined.
    package func accept(
        _ query: String?, decline: Bool, timeout: Double? = nil, client: (any EventSink)?
    ) async throws(NearbyError) -> AuthenticatedPeer? {
        try await invitations.accept(query, decline: decline, timeout: timeout, client: client)
    }

    /// Opens a stream to a peer (inviting it first if needed) and runs it until both directions end.
    package func openStream(
        to query: String, name: String, timeout: Double, source: any ByteSource, sink: any ByteSink,
        client: (any EventSink)?, ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        let peer = try await invite(query, context: nil, offer: Offer(stream: name).bounded, timeout: timeout, client: client)
        guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
        return try await streams.open(on: link, name: name, source: source, sink: sink, client: client, ready: ready)
    }

    /// Waits for an incoming stream (named `name`, from `from`, when given) and runs it.
    package func listenForStream(
        name: String?, from: String?, source: any ByteSource, sink: any ByteSink, client: (any EventSink)?,
        ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
    ) async throws(NearbyError) -> StreamSummary {
        try await streams.listen(
            name: name, from: from, source: source, sink: sink, client: client, showing: invitations.waiting, ready: ready)
    }

    /// Leaves sessions; the peers see `disconnected` with our reason.
    package func disconnect(_ query: String?, all: Bool, client: (any EventSink)?) async throws(NearbyError) -> [PeerRef] {
        let targets: [Link]
        if all {
            targets = sessions.all
        } else if let query {
            let asked = try PeerQuery(query)
            switch asked.choose(sessions.all, id: \.peer.id.rawValue, name: \.peer.name) {
            case .none: throw .notConnected(query)
            case let .one(link): targets = [link]
            case let .ambiguous(links): throw asked.ambiguity(links, id: \.peer.id.rawValue, name: \.peer.name)
            }
        } else {
            targets = []
        }
        for link in targets {
            await leave(link, because: .weLeft("disconnected by us"), telling: "disconnected")
        }
        await Link.untilDetached(targets, by: .now + .seconds(1))
        let left = targets.map(\.peer.ref)
        if let client {
            for peer in left { client.emit(Events.Disconnected(peer: peer, reason: "\(CloseReason.weLeft("disconnected by us"))", peers: sessions.count)) }
        }
        return left
    }

    static func matches(_ query: String, _ peer: AuthenticatedPeer) -> Bool {
        PeerQuery.matches(query, id: peer.id.rawValue, name: peer.name)
    }

    /// `HOST:PORT` (`[v6]:PORT` too) as host and port, or nil.
    package static func parseHostPort(_ text: String) -> (host: String, port: Int)? { Dialer.parseHostPort(text) }
}
