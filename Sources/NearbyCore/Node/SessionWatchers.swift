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
