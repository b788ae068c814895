import Foundation
import NearbyBase
import NearbyDiscovery
import NearbyWire

/// The other end of `nearby doctor`'s "both directions" check: a node asked by a peer whether it
/// sees the peer's `_nearby-doctor._tcp` instance browses that fixed type (never one a peer chose)
/// for a bounded time and says what it saw.
package enum DoctorProbe {
    /// The MPC-style service name of doctor's self-advertisement probe: `_nearby-doctor._tcp`.
    package static let service = "nearby-doctor"
    package static let registrationType = "_\(service)._tcp"
    /// The reason a node gives when its own daemon cannot browse (the words of every version).
    package static let daemonDown = "this host's DNS-SD daemon does not answer"

    /// At most this many probes browse at once in one process; more are answered "busy" at once,
    /// so a peer that opens many links cannot make the node open many daemon queries.
    package static let slots = Slots(limit: 4)

    /// Browses for `instance` until it is found or `limit` passes; answers as soon as it is seen.
    package static func look(for instance: String, within limit: Duration) async -> FrameBody.ProbeReply {
        let started = ContinuousClock.now
        let waited = { Int((ContinuousClock.now - started) / .milliseconds(1)) }
        let browser = Browser(registrationType: registrationType)
        let updates: AsyncStream<Browser.Update>
        do throws(NearbyError) {
            updates = try await browser.start()
        } catch {
            return FrameBody.ProbeReply(seen: false, waited: 0, reason: Self.daemonDown)
        }
        defer { browser.stop() }
        let found = await firstResult(within: limit) { () -> [String]? in
            for await update in updates {
                if case let .found(peer) = update, peer.instance == instance { return peer.addresses }
                if case .failed = update { return nil }
            }
            return nil
        }
        guard let addresses = found else { return FrameBody.ProbeReply(seen: false, waited: waited()) }
        return FrameBody.ProbeReply(seen: true, waited: waited(), addresses: addresses).bounded
    }

    /// A counting limit on probes running at once.
    package final class Slots: Sendable {
        package let limit: Int
        private let used = Locked(0)

        package init(limit: Int) { self.limit = limit }

        /// Takes a slot; false when all are in use.
        package func take() -> Bool {
            used.withLock { used in
                guard used < limit else { return false }
                used += 1
                return true
            }
        }

        package func give() { used.withLock { $0 = max(0, $0 - 1) } }
    }

    /// The answer to a probe for `instance`: whether this host sees it within `wait`, or busy when
    /// too many probes browse at once. The slot is taken here, in the job, so a job that never runs
    /// (the node stopping) holds none.
    static func reply(to instance: String, within wait: Duration) async -> FrameBody.ProbeReply {
        guard slots.take() else { return FrameBody.ProbeReply(seen: false, waited: 0, reason: "busy: too many probes at once") }
        defer { slots.give() }
        return await look(for: instance, within: wait)
    }
}
