import NearbyBase

extension Events {
    /// LocalSend's certificate was re-issued, once, with the official app's dates (1975–4096) and
    /// the same key: the fingerprint devices know this machine by changed from `previous` to
    /// `fingerprint`. A device that remembered the old one (a pinned sender, a favourite) sees a
    /// new fingerprint for the same alias.
    package struct IdentityRenewed: EventBody {
        package static let event = "identity-renewed"
        /// Which identity: `localsend` (`$NEARBY_HOME/localsend.json`).
        package var kind: String
        package var fingerprint: String
        package var previous: String
        package var reason: String

        package init(kind: String = "localsend", fingerprint: String, previous: String, reason: String) {
            self.kind = kind
            self.fingerprint = fingerprint
            self.previous = previous
            self.reason = reason
        }
    }

    /// A LocalSend sender came with an alias this node knows (`localsend_known`) and another
    /// fingerprint: as the official app, it is taken as the device it is (a stranger under
    /// `--auto-accept`, or put to a person), not refused, unless the alias itself was trusted.
    package struct FingerprintChanged: EventBody {
        package static let event = "fingerprint-changed"
        package var peer: PeerRef
        package var previous: String
        package var fingerprint: String
        package var reason: String

        package init(peer: PeerRef, previous: String, fingerprint: String, reason: String) {
            self.peer = peer
            self.previous = previous
            self.fingerprint = fingerprint
            self.reason = reason
        }
    }

    /// The kinds of this module, for readers of event lines (`HumanRenderer`).
    package static let localSendKinds: [any EventBody.Type] = [IdentityRenewed.self, FingerprintChanged.self]
}
