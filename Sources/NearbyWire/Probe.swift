import Foundation

/// `nearby doctor`'s question after the handshake, sent instead of an invitation: "do you see the
/// DNS-SD instance I publish as `_nearby-doctor._tcp`?" The answer tells a healthy link from
/// one-way multicast (we see the peer, it does not see us). See docs/protocol.md, section 3.
extension FrameBody {
    /// Listed in the hello's `features` by a node that answers `probe`. A node whose hello does not
    /// list it is an older one: it would take a probe as an unknown frame type (a protocol
    /// violation), so it is never sent one.
    package static let probeFeature = "probe"
    /// Listed by a node that compares before it sends a file (docs/protocol.md, section 6): a
    /// receiver tells only such a sender what it holds at the offered name (`OpenReply.held`), and
    /// takes a `close` without data from it. An older sender is answered as before.
    package static let thereFeature = "there"
    /// Listed by a node that takes small files in bundles (`Bundle`, docs/protocol.md).
    package static let bundleFeature = "bundle"
    /// Listed by a node that keeps a file's modification time: it applies an `open`'s `modified`,
    /// and a bundle's records to it carry one (docs/protocol.md, "Bundles").
    package static let datesFeature = "dates"
    /// Listed by a node that takes a stream's "not yet" (`OpenReply.waiting`): a receiver with no
    /// listener for the offered stream says so to such an opener at once, and the answer follows
    /// when a listener takes it or the wait ends. An older opener is told nothing until then.
    package static let waitsFeature = "waits"
    /// What this build speaks beyond protocol 2, sent in every hello.
    package static let features = [probeFeature, bundleFeature, thereFeature, datesFeature, waitsFeature]

    /// A peer's `features`, bounded: at most 16 names of at most 32 bytes each are kept.
    static func bounded(features: [String]?) -> [String] {
        Array((features ?? []).filter { !$0.isEmpty && $0.utf8.count <= 32 }.prefix(16))
    }

    /// The question: the asker's instance name under the fixed type `_nearby-doctor._tcp` (the
    /// type is not sent: a node never browses a type a peer chose).
    package struct Probe: Codable, Equatable, Sendable {
        package var instance: String

        package init(instance: String) { self.instance = instance }

        /// A DNS-SD instance label: 1–63 UTF-8 bytes, no control characters.
        package var isValid: Bool {
            !instance.isEmpty && instance.utf8.count <= 63
                && !instance.unicodeScalars.contains { $0.properties.generalCategory == .control }
        }
    }

    /// The answer: whether the instance was seen, after how long, and where it pointed.
    package struct ProbeReply: Codable, Equatable, Sendable {
        package var seen: Bool
        /// Milliseconds the node browsed before it saw the instance, or gave up.
        package var waited: Int
        /// The addresses the node resolved the instance to (empty when not seen).
        package var addresses: [String]
        /// Why the node did not look (too many probes at once, its daemon does not answer); nil
        /// when it looked.
        package var reason: String?

        package init(seen: Bool, waited: Int, addresses: [String] = [], reason: String? = nil) {
            self.seen = seen
            self.waited = waited
            self.addresses = addresses
            self.reason = reason
        }

        /// The same reply cut to what a reader shows: at most 8 addresses of at most 64 bytes,
        /// the reason at most 256 bytes, the time between 0 and a day.
        package var bounded: ProbeReply {
            ProbeReply(
                seen: seen, waited: min(max(waited, 0), 86_400_000),
                addresses: addresses.filter { $0.utf8.count <= 64 }.prefix(8).map { $0 },
                reason: reason.map { String($0.prefix(FrameBody.maxReasonBytes)) })
        }
    }
}
