import Foundation
import NearbyBase
import NearbyWire

/// What a stranger on the link meets after the handshake: a deadline for links that never invite
/// (pins only for peers that reached a session: `Link.pin`; files only with consent: `FileIntake`).
/// Each piece is called from one line in the node.
extension Node {
    /// A link that proved its identity but does not invite within the deadline is closed.
    func armInvitationDeadline(_ link: Link) {
        spawn { [self] in
            try? await Task.sleep(for: configuration.invitationDeadline)
            await closeIfUninvited(link)
        }
    }

    private func closeIfUninvited(_ link: Link) {
        guard sessions.holds(link), link.state == .awaitingInvite else { return }
        NearbyLog.logger.info("\(link.peer.id) at \(link.peer.address) sent no invitation within the deadline: closing")
        link.close(because: .ended("no invitation within \(configuration.invitationDeadline)"))
    }

    /// The error event for a connection refused because `known_peers` is unusable.
    nonisolated func reportRefusal(_ error: NearbyError) {
        guard case .ioFailure = error else { return }
        events.emit(Events.Failure(code: error.code, message: error.errorDescription ?? "\(error)", exitStatus: error.exitStatus.rawValue))
    }
}
