import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

/// The peers a `browse --peer` has seen (not itself), for the near names of its not-found error.
final class SeenPeers: Sendable {
    private let peers = Locked<[String: DiscoveredPeer]>([:])

    func set(_ peer: DiscoveredPeer?, for instance: String) { peers.withLock { $0[instance] = peer } }
    var all: [DiscoveredPeer] { peers.withLock { Array($0.values) } }
}

extension Nearby.Browse {
    /// What `--peer` waits on: the browser's updates, and the moment the ambiguity window closes.
    private enum Step: Sendable {
        case update(Browser.Update)
        case windowClosed
    }

    /// `browse --peer`: waits until PEER names exactly one peer, by the rule every command uses
    /// (`PeerQuery.choose`): a full ID at once, a name or prefix once browsing has run long enough
    /// for another peer of the same name to answer (`PeerQuery.ambiguityWindow`). Two peers of
    /// that name are an error listing both; none in time is `peer-not-found` with what was seen
    /// instead (near names, other service types) and the next command, as `send` says it.
    func waitForPeer(
        _ asked: PeerQuery, _ updates: AsyncStream<Browser.Update>, service: ServiceType, selfID: PeerID,
        progress: BrowseProgress, seen: SeenPeers, context: CommandContext
    ) async -> PeerOutcome {
        let windowEnds = progress.started + PeerQuery.ambiguityWindow
        let (steps, feed) = AsyncStream<Step>.makeStream()
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await update in updates { feed.yield(.update(update)) }
                feed.finish()
            }
            group.addTask {
                try? await Task.sleep(until: windowEnds, clock: .continuous)
                feed.yield(.windowClosed)
            }
            defer { group.cancelAll() }
            for await step in steps {
                if case let .update(update) = step {
                    progress.heard()
                    switch update {
                    case let .found(peer), let .updated(peer, _):
                        if peer.instance != selfID.rawValue { seen.set(peer, for: peer.instance) }
                        guard asked.matches(id: peer.instance, name: peer.txt.displayName) else { continue }
                        if case let .updated(_, changed) = update {
                            context.events.emit(Events.PeerUpdated(changed: changed, seen: Events.PeerSeen(peer, service: service, selfID: selfID)))
                            continue
                        }
                        context.events.emit(Events.PeerSeen(peer, service: service, selfID: selfID))
                        RecentPeers(paths: context.paths).recordOnce(peer, service: service, selfID: selfID)
                        if peer.instance != selfID.rawValue { progress.found() }
                    case let .lost(peer):
                        seen.set(nil, for: peer.instance)
                        guard asked.matches(id: peer.instance, name: peer.txt.displayName) else { continue }
                        context.events.emit(Events.Lost(peer, service: service))
                    case let .failed(error):
                        return .failed(error)
                    }
                }
                switch asked.choose(seen.all) {
                case let .one(peer) where peer.instance == asked.text || ContinuousClock.now >= windowEnds: return .found
                case let .ambiguous(peers): return .failed(asked.ambiguity(peers))
                case .one, .none: continue
                }
            }
            return .interrupted
        }
    }

    /// `browse --peer`'s whole run, after `browsing`: found (exit 0), ambiguous, or not found in
    /// `limit` seconds with the near names and other service types seen meanwhile.
    func runPeer(
        _ asked: PeerQuery, _ updates: AsyncStream<Browser.Update>, service: ServiceType, selfID: PeerID, domains: [String],
        limit: Double, progress: BrowseProgress, context: CommandContext
    ) async throws {
        let seen = SeenPeers()
        let elsewhere = ElsewhereSearch(query: asked.text, skipping: service.registrationType)
        elsewhere.start()
        defer { _ = elsewhere.finish() }
        let outcome = await Self.untilStopped(timeout: limit, interrupted: PeerOutcome.interrupted, timedOut: .timedOut) {
            await waitForPeer(asked, updates, service: service, selfID: selfID, progress: progress, seen: seen, context: context)
        }
        switch outcome {
        case .found, .interrupted: return
        case let .failed(error): throw error
        case .timedOut:
            var report = PeerSearchReport(
                service: service.registrationType, near: PeerSearchReport.near(asked.text, among: seen.all, excluding: selfID.rawValue),
                elsewhere: elsewhere.finish())
            report.domains = domains
            throw NearbyError.peerNotFound(asked.text, waitedSeconds: limit, seen: report)
        }
    }

    enum PeerOutcome: Sendable {
        case found
        case failed(NearbyError)
        case timedOut
        case interrupted
    }
}
