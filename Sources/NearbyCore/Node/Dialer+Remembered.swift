import Foundation
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

/// A peer this host reached or saw lately is tried at its remembered addresses at once, while
/// discovery runs: a one-shot `nearby send Bob hi` then costs a connection, not a browse. The
/// handshake still proves the identity (the expected peer ID travels with the target), so a stale or
/// forged `recent-peers.json` can only fail — and a remembered address that answers with another
/// identity, or not at all, is forgotten and discovery decides as if nothing had been remembered.
extension Dialer {
    /// The remembered target `query` names, or nil (not remembered, too old, ambiguous, HOST:PORT,
    /// or discovery already knows two peers of that name). When discovery shows the remembered
    /// peer now (a running node's browse), where it shows it is tried, not the remembered port and
    /// addresses: a node restarted since listens elsewhere, and the old port is only a refusal.
    func rememberedTarget(_ query: String) -> Target? {
        guard let recent, Self.parseHostPort(query).map({ Self.isIPAddress($0.host) }) != true,
              discovery.candidates(query, excluding: me).count <= 1,
              let entry = recent.remembered(query, service: configuration.service.name, excluding: me.rawValue),
              let port = entry.port, let addresses = entry.addresses, let first = addresses.first,
              let id = PeerID(entry.id)
        else { return nil }
        if let seen = discovery.candidates(entry.id, excluding: me).first(where: { $0.claimedID == entry.id }),
           let now = try? target(for: seen) {
            return now
        }
        return Target(host: first, port: port, expected: id, name: entry.name, alternates: Array(addresses.dropFirst()))
    }

    /// How long a remembered target waits for discovery to show the peer before it is dialled:
    /// a cached answer comes within a few milliseconds; a peer discovery cannot see (another
    /// subnet) costs this much more. `NEARBY_REMEMBERED_HEAD_START_MS` (a test knob).
    static let rememberedHeadStart: Duration =
        ProcessInfo.processInfo.environment["NEARBY_REMEMBERED_HEAD_START_MS"].flatMap(Int.init).map { .milliseconds(max($0, 0)) } ?? .milliseconds(300)

    /// Returns once discovery shows the peer `target` expects (anywhere), or at `deadline`.
    func discoveryShows(_ target: Target, until deadline: ContinuousClock.Instant) async {
        guard let id = target.expected else { return }
        startDiscovery()
        _ = await watchDiscovery(of: id, until: deadline) { _ in () }
    }

    enum RememberedOutcome {
        case connected(Negotiated, Target)
        /// Every remembered address failed; the failure, for when discovery finds the same ones.
        case failed(ConnectFailed)
    }

    /// Connects to `target`'s remembered addresses and, should discovery meanwhile show the peer
    /// elsewhere (another address or port), there too: the first connection wins, the other try is
    /// cancelled. When the remembered addresses fail, discovery's try is cancelled too — the caller
    /// goes on with the ordinary lookup, which has been browsing all along.
    func connectRemembered(
        _ target: Target, query: String, deadline: ContinuousClock.Instant, sink: any EventSink
    ) async -> RememberedOutcome {
        startDiscovery()
        enum Try: Sendable {
            case remembered(Result<(Negotiated, Target), ConnectFailed>)
            case discovered((Negotiated, Target)?)
        }
        return await withTaskGroup(of: Try.self) { group in
            group.addTask {
                do throws(ConnectFailed) {
                    return .remembered(.success(try await self.connectOnce(target, query: query, deadline: deadline, sink: sink)))
                } catch {
                    return .remembered(.failure(error))
                }
            }
            group.addTask {
                guard let elsewhere = await self.fresher(than: target, until: deadline) else { return .discovered(nil) }
                return .discovered(try? await self.connectOnce(elsewhere, query: query, deadline: deadline, sink: sink))
            }
            var outcome: RememberedOutcome?
            while let next = await group.next() {
                switch next {
                case let .remembered(.success(won)), let .discovered(won?):
                    if outcome == nil {
                        outcome = .connected(won.0, won.1)
                        group.cancelAll()
                    } else {
                        Self.closeUnused(won.0)
                    }
                case let .remembered(.failure(failure)):
                    if outcome == nil {
                        outcome = .failed(failure)
                        group.cancelAll()
                    }
                case .discovered(nil):
                    continue
                }
            }
            return outcome ?? .failed(ConnectFailed(error: .cancelled("connecting to \(query)"), refusedEverywhere: false))
        }
    }

    /// The remembered addresses of `target` did not lead to it: they are not tried again.
    func forgetRemembered(_ target: Target) {
        guard let id = target.expected else { return }
        try? recent?.forgetAddresses(id: id.rawValue, service: configuration.service.name)
    }

    /// A session we opened: where the peer answered, for the next command that names it.
    func rememberReached(_ peer: AuthenticatedPeer, at target: Target, tried: [String]) {
        guard let recent else { return }
        // In the order every connection tries them (IPv4, IPv6, link-local), so a remembered try
        // and discovery's say the same addresses in the same order.
        let addresses = RecentPeers.ordered([target.host] + tried)
        try? recent.record([RecentPeers.Entry(
            id: peer.id.rawValue, name: peer.name, service: configuration.service.name, lastSeen: Date(),
            addresses: addresses, port: target.port)])
    }

    static func closeUnused(_ negotiated: Negotiated) {
        if case let .frames(frames) = negotiated { frames.channel.channel.close(promise: nil) }
    }
}
