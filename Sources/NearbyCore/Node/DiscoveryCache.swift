import NearbyBase
import NearbyIdentity
import NearbyDiscovery
/// What the node's own browsing has found, for finding peers by name: started on first use, kept
/// up to date by the browser's updates, and failed when the daemon goes away, so a command waiting
/// for a peer hears "is avahi-daemon running?" at once instead of waiting out its timeout. The next
/// command that looks for a peer starts browsing again.
struct DiscoveryCache {
    private(set) var peers: [String: DiscoveredPeer] = [:]
    /// Why discovery stopped working, if it did.
    private(set) var failure: NearbyError?
    private(set) var browser: (any PeerBrowsing)?
    /// When this browsing started: a name is taken as unambiguous only once every peer that answers
    /// the first query (mDNS responders wait 20-120 ms before answering a shared query) has had
    /// time to be seen.
    private(set) var startedAt = ContinuousClock.now
    static let ambiguityWindow = PeerQuery.ambiguityWindow

    /// A browser to start (`PeerBrowsing.start`, whose updates go through `apply`) if nobody has
    /// yet; nil when one runs or is starting.
    mutating func begin(_ service: ServiceType, wideAreas: [WideAreaSettings] = [], link: Bool = true) -> (any PeerBrowsing)? {
        guard browser == nil else { return nil }
        failure = nil
        let browser = makeBrowser(service, wideAreas: wideAreas, link: link)
        self.browser = browser
        startedAt = .now
        return browser
    }

    /// `browser` could not start: those waiting hear why, and the next lookup starts again.
    mutating func startFailed(_ browser: any PeerBrowsing, _ error: NearbyError) {
        guard self.browser === browser else { return }
        failure = error
        self.browser = nil
    }

    mutating func apply(_ update: Browser.Update) {
        switch update {
        case let .found(peer), let .updated(peer, _): peers[peer.instance] = peer
        case let .lost(peer): peers[peer.instance] = nil
        case let .failed(error):
            failure = error
            browser = nil
            peers = [:]
        }
    }

    func stop() { browser?.stop() }

    /// Records whose host failed the identity check for the ID they claim (`ClaimedIdentity.swift`).
    var impostors: Set<String> = []

    /// Peers other than `me` that `query` names, one record per claimed ID (`oneRecordPerID`).
    func candidates(_ query: String, excluding me: PeerID) -> [DiscoveredPeer] {
        Self.oneRecordPerID(peers.values.filter { $0.matches(query) && $0.claimedID != me.rawValue }, impostors: impostors)
    }
}
