import Foundation
import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

/// `nearby doctor`: what the link holds, for the whole run: every service type announced and each
/// resolved instance of it. `responders` waits in it for one that is not this host's own; a `peer`
/// check that found nothing looks in it for PEER on other service types.
extension Nearby.Doctor {
    struct Seen: Sendable {
        let type: String
        let peer: DiscoveredPeer
    }

    final class Survey: Sendable {
        /// At most this many types are browsed (the answers come from the network).
        static let maxTypes = 32

        private struct State {
            var seen: [Seen] = []
            var browsers: [String: Browser] = [:]
            var tasks: [Task<Void, Never>] = []
            var stopped = false
        }

        private let types = TypeBrowser()
        private let state = Locked(State())
        /// Every instance as it is found (one reader: the responders check).
        let found: AsyncStream<Seen>
        private let continuation: AsyncStream<Seen>.Continuation

        init() {
            let (stream, continuation) = AsyncStream<Seen>.makeStream()
            found = stream
            self.continuation = continuation
        }

        /// Starts browsing the meta-query; throws when the daemon does not answer.
        func start() async throws(NearbyError) {
            let updates = try await types.start()
            let task = Task { [self] in
                for await update in updates {
                    guard case let .type(type, instances) = update, instances > 0, type != DoctorProbe.registrationType else { continue }
                    follow(type)
                }
            }
            state.withLock { $0.tasks.append(task) }
        }

        private func follow(_ type: String) {
            let browser = Browser(registrationType: type)
            let fresh = state.withLock { state -> Bool in
                guard !state.stopped, state.browsers[type] == nil, state.browsers.count < Self.maxTypes else { return false }
                state.browsers[type] = browser
                return true
            }
            guard fresh else { return }
            let task = Task { [self] in
                guard let updates = try? await browser.start() else { return }
                for await update in updates {
                    guard case let .found(peer) = update else { continue }
                    let seen = Seen(type: type, peer: peer)
                    state.withLock { $0.seen.append(seen) }
                    continuation.yield(seen)
                }
            }
            state.withLock { $0.tasks.append(task) }
        }

        /// Everything found so far.
        var all: [Seen] { state.withLock { $0.seen } }

        func stop() {
            let (browsers, tasks) = state.withLock { (state: inout State) -> ([Browser], [Task<Void, Never>]) in
                state.stopped = true
                let running = (Array(state.browsers.values), state.tasks)
                state.browsers = [:]
                state.tasks = []
                return running
            }
            types.stop()
            browsers.forEach { $0.stop() }
            tasks.forEach { $0.cancel() }
            continuation.finish()
        }
    }

    /// The responders check: another service on the link, not counting this host's own (its
    /// nodes, advertised under this identity's ID, anything on this host's own mDNS name, and
    /// anything whose addresses are all this host's — a second stack here under another name,
    /// python-zeroconf's `zc-1.local.`, is not another host answering).
    static func responders(
        _ survey: Survey, selfID: PeerID, ownHost: String?, ownAddresses: [String] = [], hint: String, until deadline: ContinuousClock.Instant
    ) async -> DoctorCheck {
        let started = ContinuousClock.now
        let bare: @Sendable (String) -> String = { String($0.lowercased().split(separator: "%", maxSplits: 1).first ?? "") }
        let ownSet = Set(ownAddresses.map(bare))
        let own: @Sendable (Seen) -> Bool = { seen in
            seen.peer.instance == selfID.rawValue || (ownHost != nil && seen.peer.host?.lowercased() == ownHost?.lowercased())
                || (!seen.peer.addresses.isEmpty && seen.peer.addresses.allSatisfy { ownSet.contains(bare($0)) })
        }
        let other = await firstResult(until: deadline) { () -> Seen? in
            for await seen in survey.found where !own(seen) { return seen }
            return nil
        }
        if let other {
            let types = Set(survey.all.filter { !own($0) }.map(\.type) + [other.type]).sorted()
            return DoctorCheck("responders", .ok, "services announced on the link: \(types.prefix(10).joined(separator: ", ")) "
                + "(first: \(other.peer.instance) on \(other.peer.host ?? "?"))")
        }
        let mine = Set(survey.all.filter(own).map(\.type)).sorted()
        let ignored = mine.isEmpty ? "" : " (this host's own not counted: \(mine.prefix(10).joined(separator: ", ")))"
        return DoctorCheck("responders", .warn, "no other service announced on the link in \(seconds(ContinuousClock.now - started))\(ignored)", hint: hint)
    }

    /// `name` (this host's mDNS name) asked of the hosts in this host's neighbour tables on its
    /// multicast interfaces, by unicast (`NEARBY_MDNS_QUESTION_TIMEOUT`, default 1 s, at most a
    /// third of what is left before `deadline`). nil when there is no name to ask.
    static func hostClaims(
        _ name: String?, interfaces: [NetworkInterface], environment: [String: String], until deadline: ContinuousClock.Instant
    ) async -> MDNSQuestion.Claims? {
        guard let name else { return nil }
        let links = Set(interfaces.filter { $0.up && $0.multicast && !$0.loopback }.map(\.name))
        let wait = min(MDNSQuestion.wait(environment: environment), max(.zero, deadline - .now) / 3)
        return await MDNSQuestion.askClaims(name: name, neighbours: Neighbours.answered(on: links), wait: wait)
    }
}
