import Foundation

/// How many LocalSend senders are served at once, and how slow one may be: senders on different
/// addresses each get a session of their own (one unfinished session per address, at most
/// `sessions` in all); a session must move its declared total at no less than `floorRate` bytes a
/// second after a `grace` (else it is ended with a reason); a pinned sender (`--accept-from`, by the
/// ID of the certificate it showed) is never refused for strangers: the oldest stranger's session
/// makes room. Test knobs: `NEARBY_LOCALSEND_SESSIONS`, `NEARBY_LOCALSEND_FLOOR_BPS`,
/// `NEARBY_LOCALSEND_GRACE_MS`.
enum LocalSendSessions {
    struct Limits: Sendable {
        var sessions = 8
        var floorRate: UInt64 = 16 << 10
        var grace: Duration = .seconds(60)

        static func from(environment: [String: String]) -> Limits {
            var limits = Limits()
            func number(_ name: String) -> Int? { environment[name].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil } }
            if let sessions = number("NEARBY_LOCALSEND_SESSIONS") { limits.sessions = sessions }
            if let rate = number("NEARBY_LOCALSEND_FLOOR_BPS") { limits.floorRate = UInt64(rate) }
            if let grace = number("NEARBY_LOCALSEND_GRACE_MS") { limits.grace = .milliseconds(grace) }
            return limits
        }
    }

    /// Read when a session is made, not once: the environment is the knob (tests raise the grace
    /// for a loaded machine, where a session's steps can be a minute apart).
    static var limits: Limits { Limits.from(environment: ProcessInfo.processInfo.environment) }

    /// When a session declaring `total` bytes must be done: the grace, then the floor rate.
    static func deadline(for total: UInt64, from now: ContinuousClock.Instant = .now, limits: Limits = limits) -> ContinuousClock.Instant {
        let seconds = Double(total) / Double(max(1, limits.floorRate))
        return now + limits.grace + .seconds(min(seconds, 366 * 86400))
    }
}

extension LocalSendReceiver {
    /// Whether the sender is one the user chose (`--accept-from`): by the certificate it showed
    /// when it showed one (its ID), else by what it claims (the official apps show theirs).
    func isPinned(_ device: LocalSendDevice, shown: String?) -> Bool {
        guard !policy.acceptFrom.isEmpty else { return false }
        if let shown {
            let id = LocalSendDevice.peerID(fingerprint: shown)
            return policy.acceptFrom.contains { !$0.isEmpty && id.hasPrefix($0.lowercased()) }
        }
        return policy.acceptFrom.contains(where: device.matches)
    }

    /// Whether the user trusted this sender by its alias alone (`--accept-from NAME`, `accept
    /// --from NAME`), not by its ID: then a known alias with another fingerprint is refused.
    func trustedByAliasOnly(_ device: LocalSendDevice) -> Bool {
        policy.acceptFrom.contains { $0 == device.alias }
            && !policy.acceptFrom.contains { !$0.isEmpty && device.id.hasPrefix($0.lowercased()) }
    }

    /// Ends the sessions past their floor-rate deadline, and forgets finished ones.
    func expireSlow(now: ContinuousClock.Instant = .now) {
        for session in sessions.values {
            if session.finished {
                sessions[session.id] = nil
            } else if session.stranger, now > session.deadline {
                let name = session.peer.name ?? session.peer.id
                expire(session, reason: "\(name) sent its files more slowly than \(LocalSendSessions.limits.floorRate / 1024) KiB/s: the transfer was ended")
            }
        }
    }

    /// Nil when a new session from `host` may start; else the answer that refuses it. One
    /// unfinished session per address (409, as the official app answers a second one) unless the
    /// first is unused; a sender silent for `sessionIdle` gives its place up; past `limits.sessions`, a stranger waits (429)
    /// and a pinned sender takes the oldest stranger's place.
    func admitSession(from host: String, pinned: Bool, limits: LocalSendSessions.Limits = LocalSendSessions.limits) -> LocalSendAnswer? {
        let now = ContinuousClock.now
        expireSlow(now: now)
        for session in sessions.values where now - session.lastActivity > Self.sessionIdle && session.receiving == 0 {
            expire(session, reason: "\(session.peer.name ?? session.peer.id) sent nothing for \(Int(Self.sessionIdle / .seconds(1))) s")
        }
        // A sender asking again before it used its session lost the answer that opened it (issue 58:
        // the connection ended under it): the unused session is given up at once, not in 30 s.
        for session in sessions.values where session.host == host && session.receiving == 0
            && session.files.values.allSatisfy({ $0.state == .waiting && $0.attempts == 0 }) {
            expire(session, reason: "\(session.peer.name ?? session.peer.id) asked again before it sent a file")
        }
        // A node-less `accept` takes one transfer: one session at a time.
        if policy.acceptFirst || policy.declineFirst, !sessions.isEmpty { return .status(409, "Blocked by another session") }
        if sessions.values.contains(where: { $0.host == host }) { return .status(409, "Blocked by another session") }
        guard sessions.count >= limits.sessions else { return nil }
        guard pinned, let oldest = sessions.values.filter({ !$0.pinned }).min(by: { $0.lastActivity < $1.lastActivity }) else {
            return .status(429, "this node is receiving from \(sessions.count) senders already; try again in a moment")
        }
        expire(oldest, reason: "a sender this node was told to accept from needed its place")
        return nil
    }

    /// Nil when a stranger's list, `bytes` declared in its first `files` files, still fits the
    /// strangers' quota on unfinished files; else the answer (413) that refuses it before anything
    /// is written. Charged entry by entry as the list is read (`readList`). The quota's count of
    /// files is not charged here: a session writes two at a time, each counted as it is written.
    func overQuota(bytes: UInt64, files: Int) -> LocalSendAnswer? {
        let limit = partials.limits.bytes
        guard bytes > limit else { return nil }
        return .status(413, "this node takes at most \(limit) bytes of unfinished files from senders it does not know; this transfer offers more (\(bytes) bytes in its first \(files) file\(files == 1 ? "" : "s"))")
    }
}
