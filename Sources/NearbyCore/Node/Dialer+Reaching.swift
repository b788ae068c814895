import Foundation
import NearbyBase
import NearbyWire

/// One try of an invitation's dialing, as the node asks for it: where to go (`find`: where the peer
/// was last reached, a remembered address, or the lookup), then a connection there (`reach`), and
/// whether a failed handshake is worth another try (`retry`). The node decides everything that
/// spans links around it (sessions already there, crossed invitations, the invitation itself).
extension Dialer {
    /// Why a try led nowhere but another one may not.
    enum Retry {
        /// The remembered address led nowhere: forgotten; try again with discovery alone.
        case withoutRemembered
        /// The record tried claims the peer's ID, but its host is not it (or did not answer): try the
        /// next that does.
        case passedOver(NearbyError)
    }

    enum Dialed {
        case connected(Negotiated, Target)
        case retry(Retry)
    }

    /// Where to dial `query`: `known` (where the peer was last reached), else a remembered address
    /// (when `remembering`), else what the lookup finds. `remembered`: the target was not looked up.
    func find(
        _ query: String, known: Target?, remembering: Bool, until deadline: ContinuousClock.Instant, timeout: Double, client: any EventSink
    ) async throws(NearbyError) -> (target: Target, remembered: Bool) {
        if let known { return (known, true) }
        if remembering, let first = rememberedTarget(query) {
            // Discovery's head start: a node restarted since listens on a new port, which the
            // daemon's cache gives within moments; that fresh answer wins over the remembered port.
            await discoveryShows(first, until: min(deadline, .now + Self.rememberedHeadStart))
            if let remembered = rememberedTarget(query) { return (remembered, true) }
        }
        return (try await resolve(query, until: deadline, timeout: timeout, client: client), false)
    }

    /// Connects to `target` and checks that a nearby node with our encryption answered there. A
    /// remembered target is tried while discovery runs; when it fails it is forgotten and discovery
    /// decides (`.retry(.withoutRemembered)`), unless discovery finds the very addresses that just
    /// failed. A discovered record whose host cannot be reached is passed over for another record
    /// of the same ID.
    func reach(
        _ target: Target, remembered: Bool, query: String, deadline: ContinuousClock.Instant, timeout: Double,
        client: any EventSink, sink: any EventSink
    ) async throws(NearbyError) -> Dialed {
        let negotiated: Negotiated
        let at: Target
        if remembered {
            switch await connectRemembered(target, query: query, deadline: deadline, sink: sink) {
            case let .connected(won, there):
                (negotiated, at) = (won, there)
            case let .failed(failure):
                if case .cancelled = failure.error { throw failure.error }
                forgetRemembered(target)
                // Discovery, browsing since the start, decides. Addresses that did not answer are not
                // waited on twice; refused ones are tried again, since the ordinary path then waits
                // for discovery to show a restarted peer's new port.
                if !failure.refusedEverywhere {
                    let found = try await resolve(query, until: deadline, timeout: timeout, client: client)
                    if found.expected == target.expected, found.port == target.port, Set(found.hosts).isSubset(of: Set(target.hosts)) {
                        throw failure.error
                    }
                }
                return .retry(.withoutRemembered)
            }
        } else {
            do {
                (negotiated, at) = try await connect(target, query: query, deadline: deadline, sink: sink)
            } catch {
                if case .connectionFailed = error, let record = target.record, passOver(record, claiming: target.expected) {
                    return .retry(.passedOver(error))
                }
                throw error
            }
        }
        if case let .refused(_, theirs, decision) = negotiated {
            throw Preamble.mismatch(ours: configuration.encryption, theirs: theirs, decision: decision)
        }
        if case let .foreign(_, what) = negotiated {
            throw .connectionFailed("\(at.address) is not a nearby node (\(what))")
        }
        return .connected(negotiated, at)
    }

    /// Whether the handshake's `error` at `target` is worth another try: a remembered address where
    /// another identity answers is forgotten and discovery decides; a record that claims the peer's
    /// ID but whose host is another identity is passed over for the next.
    func retry(after error: NearbyError, at target: Target, remembered: Bool) -> Retry? {
        guard case .identityMismatch = error else { return nil }
        if remembered {
            forgetRemembered(target)
            return .withoutRemembered
        }
        if let record = target.record, passOver(record, claiming: target.expected) { return .passedOver(error) }
        return nil
    }

    /// Whether another peer than this node carries `query`, once browsing has run its ambiguity window.
    func seesAnother(_ query: String) async -> Bool {
        startDiscovery()
        let settled = discovery.startedAt + DiscoveryCache.ambiguityWindow
        while !discovers(query), ContinuousClock.now < settled, discovery.failure == nil, !Task.isCancelled {
            let change = OneShot<Void>()
            discoveryWaiters.removeAll { $0.isSettled }
            discoveryWaiters.append(change)
            _ = await change.wait(until: settled)
        }
        return discovers(query)
    }

    /// "Still looking": how long so far, how long the lookup goes on, and the names seen that come
    /// close to the one asked for.
    func lookingEvent(_ query: String, started: ContinuousClock.Instant, deadline: ContinuousClock.Instant) -> Events.Looking {
        let now = ContinuousClock.now
        let near = PeerSearchReport.near(query, among: discovery.peers.values, excluding: me.rawValue)
        func seconds(_ duration: Duration) -> Double { Double(duration / .milliseconds(1)).rounded() / 1000 }
        return Events.Looking(
            peer: query, service: configuration.service.registrationType, seconds: seconds(now - started),
            near: near, remaining: seconds(max(deadline - now, .zero)))
    }
}
