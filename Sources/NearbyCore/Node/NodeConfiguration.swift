import Foundation
import NearbyBase
import NearbyIdentity
import NearbyDiscovery
import NearbyWire

/// How a node runs.
package struct NodeConfiguration: Sendable {
    package var service: ServiceType
    package var encryption: EncryptionPreference = .required
    /// Publish a DNS-SD advertisement (advertise, accept). Initiating and one-shot nodes do not.
    package var advertise = false
    /// The command ends by itself after this many seconds (`accept --timeout`): said in `advertising`.
    package var stopsAfter: Double?
    package var displayName: String?
    package var info: [String: String] = [:]
    /// Where received files land; nil: this node takes no files (every offer is refused).
    package var saveDirectory: String?
    package var port = 0
    package var autoAccept = false
    package var acceptFrom: [String] = []
    /// Who set the accepting policy, for the `by` of `accepted` events: nil when the flags did
    /// (`--auto-accept`, `--accept-from`); a command that accepts for itself names itself.
    package var acceptedBy: String?
    /// How long an incoming stream waits for `nearby stream --listen` before it is refused
    /// (`NEARBY_STREAM_WAIT` seconds: tests need not wait 30 s).
    package var unclaimedStreamWait = Duration.seconds(30)
    /// How long an authenticated link that we did not open has to send its invitation before it is
    /// closed (`NEARBY_INVITE_DEADLINE` seconds).
    package var invitationDeadline = Duration.seconds(5)
    /// How long the node browses for a `nearby doctor` probe's instance before it answers "not
    /// seen" (`NEARBY_PROBE_WAIT` seconds).
    package var probeWait = Duration.seconds(3)
    /// How many strangers `--auto-accept` pins before the least recently seen is forgotten
    /// (`NEARBY_AUTO_PIN_CAP`; docs/security.md).
    package var autoPinCap = KnownPeers.defaultAutoCap
    /// `--domain`: the unicast DNS domains this node also browses and registers in.
    package var wideAreas: [WideAreaSettings] = []
    /// On the link (mDNS) too; false only with `--no-link` (and a domain).
    package var link = true

    /// Where this node browses and registers, as events and sentences name it.
    package var domains: [String] { (link || wideAreas.isEmpty ? ["local."] : []) + wideAreas.map(\.domainText) }
    /// The disk quota on strangers' partial files and empty directories (`NEARBY_PARTIAL_FILES`,
    /// `NEARBY_PARTIAL_BYTES`, `NEARBY_PARTIAL_LIFETIME`, `NEARBY_PARTIAL_DIRECTORIES`,
    /// `NEARBY_PARTIAL_DIRECTORIES_PER_PEER`; docs/security.md): the process's budget's, or the
    /// command context's environment's (`apply`).
    var partialQuota = ResourceBudget.shared.limits.disk
    /// The one admission of strangers' connections, over every protocol the node serves (its
    /// links, a web page beside it): `NEARBY_STRANGER_CONNECTIONS_TOTAL`, `_PER_ADDRESS`,
    /// `_HANDSHAKE_MS`, `_IDLE_MS` (docs/security.md).
    package var admission = Admission.Limits()

    /// The waits and caps a user (or a test) may change through the environment.
    package mutating func apply(environment: [String: String]) {
        if let wait = Duration.seconds(parsing: environment["NEARBY_STREAM_WAIT"]) { unclaimedStreamWait = wait }
        if let deadline = Duration.seconds(parsing: environment["NEARBY_INVITE_DEADLINE"]) { invitationDeadline = deadline }
        if let wait = Duration.seconds(parsing: environment["NEARBY_PROBE_WAIT"]) { probeWait = min(wait, .seconds(30)) }
        if let cap = environment["NEARBY_AUTO_PIN_CAP"].flatMap(Int.init), cap > 0 { autoPinCap = cap }
        for index in wideAreas.indices { wideAreas[index].apply(environment: environment) }
        partialQuota = .from(environment: environment)
        admission = Admission.Limits().with(environment: environment, prefix: "STRANGER_CONNECTIONS")
    }

    package init(service: ServiceType) { self.service = service }
}
