import Foundation
import NearbyBase
import NearbyWire

/// The commands that stay "until the peer leaves" (`Node.sessionChanges`): each hears every session
/// change until it stops listening.
struct SessionWatchers {
    private var watchers: [UUID: AsyncStream<Node.SessionChange>.Continuation] = [:]

    mutating func watch() -> AsyncStream<Node.SessionChange> {
        let (stream, continuation) = AsyncStream<Node.SessionChange>.makeStream()
        watchers[UUID()] = continuation
        return stream
    }

    /// Tells every watcher; one that stopped listening is forgotten.
    mutating func notify(_ change: Node.SessionChange) {
        for (id, continuation) in watchers {
            if case .terminated = continuation.yield(change) { watchers[id] = nil }
        }
    }
}

extension Events.Connected {
    /// The `connected` event of a session with `peer`, one of `peers` sessions.
    init(_ peer: AuthenticatedPeer, peers: Int) {
        self.init(peer: peer.ref, address: peer.address, verificationCode: peer.verificationCode, encrypted: peer.encrypted, peers: peers)
    }
}
