import NearbyBase
import NearbyIdentity
/// A link that reached a session pins its peer's key (`KnownPeers`): the link proved the identity
/// in its handshake, and only a session, never a stranger's bare connection, is remembered.
extension Link {
    /// Pins the peer; false (and the link closed, an error event naming the file) when `known_peers`
    /// cannot be used or now holds another key for it. A stranger that `--auto-accept` let in goes
    /// to the capped list of strangers (KnownPeers.swift).
    package func pin(in knownPeers: KnownPeers, events: any EventSink) -> Bool {
        let error: NearbyError
        let stranger = takeAutoAccepted()
        do {
            switch try knownPeers.pin(id: peer.id, key: peer.key, name: peer.name, stranger: stranger) {
            case .known, .new:
                // A peer you chose that `--auto-accept` let in again is still one you chose.
                if stranger, !knownPeers.chosen(peer.id) { account.markStranger() }
                return true
            case .changed: error = .keyChanged(peer: peer.id.rawValue, knownPeers: knownPeers.file(pinning: peer.id))
            }
        } catch let failure {
            error = failure
        }
        let message = error.errorDescription ?? "\(error)"
        events.emit(Events.Failure(code: error.code, message: message, exitStatus: error.exitStatus.rawValue))
        close(because: .ended(message))
        return false
    }
}
