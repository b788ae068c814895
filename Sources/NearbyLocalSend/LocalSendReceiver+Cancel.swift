import NearbyBase

/// A session this node ended before its files were all in (too slow, silent, its place needed,
/// the node stopping): its sender is told with `POST /cancel?sessionId=`, as the official app's
/// receiver tells its sender (`receive_controller.dart` `cancelSession`), at the port and protocol
/// the sender's `info` named, so that it stops rather than meeting a 403 a file.
package struct SenderCancel: Sendable {
    package var session: String
    package var sender: LocalSendTarget
}

extension LocalSendReceiver {
    /// Where a sender's `/cancel` goes: its address, the port and protocol it named, pinned to the
    /// certificate it showed (none shown: the address alone, as a cancel carries nothing).
    static func cancelTarget(_ device: LocalSendDevice, shown: String?) -> LocalSendTarget {
        var target = LocalSendTarget(device)
        target.fingerprint = target.https ? shown : nil
        return target
    }

    /// Queues the `/cancel` for an ended session that had files still to come.
    func tellSender(_ session: Session) {
        guard !session.finished, let sender = session.sender else { return }
        cancelFeed.yield(SenderCancel(session: session.id, sender: sender))
    }

    /// The node stops: every unfinished session ends, and its sender is told.
    package func endAll() -> [SenderCancel] {
        let open = sessions.values.filter { !$0.finished }
        sessions = [:]
        return open.compactMap { session in session.sender.map { SenderCancel(session: session.id, sender: $0) } }
    }
}

extension LocalSendHTTP {
    /// Tells a sender its session is over (waited for at most 2 s; also from a cancelled task).
    package func tell(_ cancel: SenderCancel) async {
        await fireAndWait(
            host: cancel.sender.host, port: cancel.sender.port, https: cancel.sender.https,
            path: LocalSendDefaults.apiPrefix + "/cancel?sessionId=" + LocalSendSender.query(cancel.session),
            expectedFingerprint: cancel.sender.fingerprint, timeout: .seconds(2))
    }
}
