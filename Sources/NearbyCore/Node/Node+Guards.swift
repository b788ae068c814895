import Foundation

/// What a stranger on the link meets after the handshake: pins only for peers that reached a
/// session, and a deadline for links that never invite (files only with consent: `FileIntake`).
/// Each piece is called from one line in the node.
extension Node {
    /// Pins the peer of a link that reached a session; false (and the link closed, an error event
    /// naming the file) when `known_peers` cannot be used or now holds another key for it. A
    /// stranger that `--auto-accept` let in goes to the capped list of strangers (KnownPeers.swift).
    func pinSession(_ link: Link) -> Bool {
        let error: NearbyError
        let stranger = link.takeAutoAccepted()
        do {
            switch try knownPeers.pin(id: link.peer.id, key: link.peer.key, name: link.peer.name, stranger: stranger) {
            case .known, .new:
                // A peer you chose that `--auto-accept` let in again is still one you chose.
                if stranger, !knownPeers.chosen(link.peer.id) { link.account.markStranger() }
                return true
            case .changed: error = .keyChanged(peer: link.peer.id.rawValue, knownPeers: knownPeers.file(pinning: link.peer.id))
            }
        } catch let failure {
            error = failure
        }
        let message = error.errorDescription ?? "\(error)"
        events.emit(Events.Failure(code: error.code, message: message, exitStatus: error.exitStatus.rawValue))
        link.close(because: .ended(message))
        return false
    }

    /// A link that proved its identity but does not invite within the deadline is closed.
    func armInvitationDeadline(_ link: Link) {
        spawn { [self] in
            try? await Task.sleep(for: configuration.invitationDeadline)
            await closeIfUninvited(link)
        }
    }

    private func closeIfUninvited(_ link: Link) {
        guard links.contains(link), link.state == .awaitingInvite else { return }
        NearbyLog.logger.info("\(link.peer.id) at \(link.peer.address) sent no invitation within the deadline: closing")
        link.close(because: .ended("no invitation within \(configuration.invitationDeadline)"))
    }

    /// The error event for a connection refused because `known_peers` is unusable.
    nonisolated func reportRefusal(_ error: NearbyError) {
        guard case .ioFailure = error else { return }
        events.emit(Events.Failure(code: error.code, message: error.errorDescription ?? "\(error)", exitStatus: error.exitStatus.rawValue))
    }
}
