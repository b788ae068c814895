import Foundation
import NearbyBase

/// Browses several places as one — the link (mDNS) and each `--domain` — as Apple's Bonjour browses
/// `local.` and its wide-area domains at once. A peer found in two places is one peer (by ID): found
/// once, its addresses merged, lost when the last place loses it. If one place fails, the whole
/// browse fails, as a single browser's would.
final class MergedBrowser: PeerBrowsing, Sendable {
    package let sources: [any PeerBrowsing]
    private let task = Locked<Task<Void, Never>?>(nil)

    package init(sources: [any PeerBrowsing]) { self.sources = sources }

    package var domain: String { domains.joined(separator: ", ") }
    package var domains: [String] { sources.map(\.domain) }

    package func start() async throws(NearbyError) -> AsyncStream<Browser.Update> {
        var streams: [AsyncStream<Browser.Update>] = []
        for source in sources {
            do {
                streams.append(try await source.start())
            } catch {
                for started in sources.prefix(streams.count) { started.stop() }
                throw error
            }
        }
        let (stream, continuation) = AsyncStream<Browser.Update>.makeStream()
        let table = SharedMergeTable()
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for (index, updates) in streams.enumerated() {
                    group.addTask {
                        for await update in updates {
                            let merged = table.state.withLock { $0.apply(update, from: index) }
                            for out in merged { continuation.yield(out) }
                            if case .failed = update { return }
                        }
                    }
                }
                // The first source to fail ends the browse; the others are stopped.
                for await _ in group {
                    if table.state.withLock({ $0.failed }) { group.cancelAll(); break }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [sources] _ in
            task.cancel()
            for source in sources { source.stop() }
        }
        self.task.withLock { $0 = task }
        return stream
    }

    package func stop() {
        task.withLock { $0 }?.cancel()
        for source in sources { source.stop() }
    }

    package func firstLook() async -> Bool {
        for source in sources where !(await source.firstLook()) { return false }
        return true
    }
}

private final class SharedMergeTable: Sendable {
    let state = Locked(MergeTable())
}

/// What a source's update means for the merged view. Pure, tested without sockets.
struct MergeTable {
    /// Per peer ID, what each source sees of it, in the order the sources found it.
    private(set) var seen: [String: [(source: Int, peer: DiscoveredPeer)]] = [:]
    private(set) var failed = false

    /// The peer as the merged view shows it: as the place that found it first has it (its domain,
    /// host, interface), with every place's addresses, each once.
    func merged(_ instance: String) -> DiscoveredPeer? {
        guard let views = seen[instance], var peer = views.first?.peer else { return nil }
        for view in views.dropFirst() {
            for address in view.peer.addresses where !peer.addresses.contains(address) { peer.addresses.append(address) }
        }
        return peer
    }

    mutating func apply(_ update: Browser.Update, from source: Int) -> [Browser.Update] {
        switch update {
        case let .found(peer), let .updated(peer, _):
            let before = merged(peer.instance)
            var views = seen[peer.instance] ?? []
            if let index = views.firstIndex(where: { $0.source == source }) {
                views[index].peer = peer
            } else {
                views.append((source, peer))
            }
            seen[peer.instance] = views
            guard let after = merged(peer.instance) else { return [] }
            guard let before else { return [.found(after)] }
            let changed = Self.changes(from: before, to: after)
            return changed.isEmpty ? [] : [.updated(after, changed: changed)]
        case let .lost(peer):
            guard let before = merged(peer.instance) else { return [] }
            seen[peer.instance]?.removeAll { $0.source == source }
            guard let after = merged(peer.instance) else {
                seen[peer.instance] = nil
                return [.lost(before)]
            }
            let changed = Self.changes(from: before, to: after)
            return changed.isEmpty ? [] : [.updated(after, changed: changed)]
        case .failed:
            failed = true
            return [update]
        }
    }

    /// What differs, named as the mDNS browser names it.
    static func changes(from old: DiscoveredPeer, to new: DiscoveredPeer) -> [String] {
        var changed: [String] = []
        if old.txt.displayName != new.txt.displayName { changed.append("name") }
        if old.txt.info != new.txt.info || old.txt.protocolVersion != new.txt.protocolVersion { changed.append("info") }
        if old.port != new.port || old.host != new.host { changed.append("port") }
        if old.addresses != new.addresses { changed.append("addresses") }
        return changed
    }
}
