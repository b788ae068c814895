import NearbyBase
/// A PEER as the user typed it, checked once: an ID, an ID prefix, a display name, or HOST:PORT.
/// Every command matches peers through it, so one rule says what a name means everywhere (`send`,
/// `browse --peer`, `accept`, `disconnect` …), and `text` — the user's words, not the peer's ID —
/// is what the sentences about that peer say.
package struct PeerQuery: Sendable, Hashable, CustomStringConvertible {
    package let text: String

    /// Refuses an empty PEER at once: it would match nothing, and a command would wait out its
    /// timeout looking for it.
    package init(_ text: String) throws(NearbyError) {
        guard !text.isEmpty else { throw .invalidArgument(Self.emptyRule) }
        self.text = text
    }

    /// How long browsing runs before a name is taken as unambiguous: every peer that answers the
    /// first query (mDNS responders wait 20-120 ms before answering a shared query) has had time to
    /// be seen by then.
    package static let ambiguityWindow = Duration.milliseconds(300)

    package static let emptyRule = "the peer is empty: name it by ID, ID prefix, display name, or HOST:PORT"

    /// Checks every PEER a command was given, before it does anything.
    package static func check(_ texts: [String?]) throws(NearbyError) {
        for case let text? in texts { _ = try PeerQuery(text) }
    }

    package var description: String { text }

    /// Whether this query names the peer `id` called `name`: its full ID, a prefix of it, or its
    /// display name exactly.
    package func matches(id: String, name: String?) -> Bool {
        Self.matches(text, id: id, name: name)
    }

    package static func matches(_ text: String, id: String, name: String?) -> Bool {
        !text.isEmpty && (id.hasPrefix(text) || name == text)
    }

    /// What a query names among some peers.
    package enum Choice<Peer> {
        case none
        case one(Peer)
        /// Two or more, none by its full ID: the user must say which.
        case ambiguous([Peer])
    }

    /// The one ambiguity rule: a full ID names its peer; otherwise a query that matches exactly one
    /// peer names it, and one that matches several names none of them.
    package func choose<Peer>(_ peers: [Peer], id: (Peer) -> String, name: (Peer) -> String?) -> Choice<Peer> {
        let matching = peers.filter { matches(id: id($0), name: name($0)) }
        if let exact = matching.first(where: { id($0) == text }) { return .one(exact) }
        guard let first = matching.first else { return .none }
        return matching.count == 1 ? .one(first) : .ambiguous(matching)
    }

    /// The error for an ambiguous choice: every candidate by ID and name.
    package func ambiguity<Peer>(_ peers: [Peer], id: (Peer) -> String, name: (Peer) -> String?) -> NearbyError {
        .peerAmbiguous(text, candidates: peers.map { "\(id($0)) (\(name($0) ?? "?"))" }.sorted())
    }
}

extension PeerQuery {
    package func choose(_ peers: [DiscoveredPeer]) -> Choice<DiscoveredPeer> {
        choose(peers, id: \.claimedID, name: \.txt.displayName)
    }

    package func ambiguity(_ peers: [DiscoveredPeer]) -> NearbyError {
        ambiguity(peers, id: \.claimedID, name: \.txt.displayName)
    }
}
