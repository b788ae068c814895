/// Factories for the events a second protocol's module (NearbyLocalSend) reports as nearby's own
/// do: the same kinds and fields, made outside the core. Factories rather than initializers, so
/// they never collide with the memberwise initializers the core itself calls.
extension Events.FileStarted {
    package static func make(transfer: String, direction: String, peer: PeerRef, path: String, bytes: UInt64) -> Self {
        Self(transfer: transfer, direction: direction, peer: peer, path: path, bytes: bytes, skipped: 0)
    }
}

extension Events.FileDone {
    package static func make(transfer: String, peer: PeerRef, path: String, bytes: UInt64, sha256: String, seconds: Double) -> Self {
        Self(transfer: transfer, peer: peer, path: path, bytes: bytes, skipped: 0, sha256: sha256, seconds: seconds)
    }
}

extension Events.FileFailed {
    package static func make(transfer: String, direction: String, peer: PeerRef, path: String, code: String, reason: String) -> Self {
        Self(transfer: transfer, direction: direction, peer: peer, path: path, code: code, reason: reason, resumable: false)
    }
}

extension Events.Declined {
    package static func make(invitation: String, peer: PeerRef, reason: String) -> Self {
        Self(invitation: invitation, peer: peer, reason: reason)
    }
}

extension Events.Accepted {
    package static func make(invitation: String, peer: PeerRef, by: String) -> Self {
        Self(invitation: invitation, peer: peer, by: by)
    }
}

extension Events.Invitation {
    /// A LocalSend sender's request: no verification code (LocalSend has none), `kind` localsend.
    package static func make(invitation: String, peer: PeerRef, context: String?, expires: String, answeredBy: String?) -> Self {
        Self(invitation: invitation, peer: peer, context: context, verificationCode: "", encrypted: true, expires: expires, answeredBy: answeredBy, kind: "localsend")
    }
}

extension Events.Sent {
    package static func make(peers: [PeerRef], bytes: Int) -> Self {
        Self(peers: peers, bytes: bytes)
    }
}

extension Events.Message {
    /// A text a peer sent, as received.
    package static func make(text: String, from peer: PeerRef) -> Self {
        Self(Array(text.utf8), from: peer)
    }
}
