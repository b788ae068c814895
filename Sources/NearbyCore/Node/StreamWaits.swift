import Foundation
import NearbyBase

/// What spans links in streams: incoming ones waiting for a listener (at most
/// `maxUnclaimedStreams`, each for at most `listenerWait`), and listeners waiting for one. A
/// running stream belongs to its link's channels.
struct StreamWaits {
    var pending: [PendingStream] = []
    var listeners: [StreamListener] = []

    /// The oldest waiting stream a listener for `name` from `from` wants, taken off the list.
    mutating func takePending(name: String?, from: String?) -> StreamMatch? {
        guard let index = pending.firstIndex(where: { Self.wants(name, from, $0.stream, $0.link) }) else { return nil }
        let taken = pending.remove(at: index)
        return StreamMatch(stream: taken.stream, link: taken.link)
    }

    /// Hands `match` to the first listener that wants it; false when none does. A listener whose
    /// client left has abandoned its wait: it never gets a stream.
    mutating func giveListener(_ match: StreamMatch) -> Bool {
        listeners.removeAll { $0.claimed.isSettled }
        guard let index = listeners.firstIndex(where: { Self.wants($0.name, $0.from, match.stream, match.link) }) else { return false }
        return listeners.remove(at: index).claimed.settle(match)
    }

    static func wants(_ name: String?, _ from: String?, _ stream: StreamChannel, _ link: Link) -> Bool {
        (name == nil || name == stream.name) && (from.map { Node.matches($0, link.peer) } ?? true)
    }
}

struct PendingStream {
    let stream: StreamChannel
    let link: Link
}

struct StreamListener {
    let id = UUID()
    let name: String?
    let from: String?
    /// The listener's client: it sees the invitations it may be waiting for (Node.invited).
    var sink: (any EventSink)? = nil
    let claimed = OneShot<StreamMatch>()

    func wants(_ peer: AuthenticatedPeer) -> Bool { from.map { Node.matches($0, peer) } ?? true }
}

/// An incoming stream and the link it came on, handed to the listener that takes it.
struct StreamMatch: Sendable {
    let stream: StreamChannel
    let link: Link
}
