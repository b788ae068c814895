import Foundation
import NIOHTTP1
import NearbyBase
import NearbyTransfer
import NearbyHTTP

/// Who may send us what: nearby's consent rules, for LocalSend senders.
package struct LocalSendPolicy: Sendable {
    /// Nil: every file offer is refused (`--save-dir` not given).
    package var saveDirectory: String?
    package var pin: String?
    package var autoAccept = false
    /// Aliases or ID prefixes whose transfers are accepted.
    package var acceptFrom: [String] = []
    /// `accept --localsend`: the first transfer (from `acceptFrom` when given) is accepted, then the command ends.
    package var acceptFirst = false
    /// `accept --localsend --decline`: the first transfer is declined.
    package var declineFirst = false
    /// The bounds on a prepare-upload's file list (`NEARBY_LOCALSEND_FILES`, `_LIST_BYTES`).
    package var list = PrepareUploadList.Limits.from(environment: ProcessInfo.processInfo.environment)

    package init(saveDirectory: String?, pin: String?) {
        self.saveDirectory = saveDirectory
        self.pin = pin
    }
}

/// The routes' decisions (protocol v2 sections 4 and 6.1): a sender's `prepare-upload` becomes an
/// `invitation`, answered by the policy; its files land as nearby's do (`IncomingUpload`); `cancel`
/// ends it. Senders on different addresses are served at once, each session on its own account
/// (`LocalSendSessions`: one per address, a floor rate, the strangers' quota); `ended` tells a
/// node-less `accept` how its transfer went.
package actor LocalSendReceiver {
    struct Offered: Sendable {
        var id: String
        var token: String
        var name: String
        /// The folders above it, each part sanitized (a folder sent keeps its shape), never outside --save-dir.
        var folders: [String] = []
        var size: UInt64
        var sha256: String?
        /// Its dates, given to the file once it is whole and placed.
        var dates: LocalSendFileDates? = nil
        var state: State
        /// Uploads begun (a SHA-256 mismatch may be retried, `maxAttempts` in all).
        var attempts = 0
        enum State: Sendable { case waiting, receiving, done, failed }
    }

    struct Session: Sendable {
        var id: String
        var host: String
        var peer: PeerRef
        var files: [String: Offered]
        var failure: NearbyError?
        var lastActivity = ContinuousClock.now
        /// Past this, the session is slower than the floor rate and is ended (`LocalSendSessions`).
        var deadline: ContinuousClock.Instant = .now + .seconds(3600)
        /// Where the sender hears that this node ended the session (`/cancel`, Receiver+Cancel).
        var sender: LocalSendTarget?
        /// A sender the user chose (`--accept-from`): never refused or ended for a stranger.
        var pinned = false
        /// Let in by `--auto-accept` alone (not chosen, not accepted by a person), as the core's
        /// strangers are: charged to the strangers' quota and held to the floor rate.
        var stranger = true
        /// Files neither done nor failed, and files being uploaded now: counted as their states
        /// change (`set`), so that a folder's thousands of uploads cost no walk of the list each.
        var unsettled = 0
        var receiving = 0
        var finished: Bool { unsettled == 0 }

        /// Changes one file's state in place (never through a copy of `files`: a copy of a
        /// 5,000-entry map for each upload made a folder's uploads quadratic).
        /// What an upload needs of its session, without its file map.
        struct Summary {
            var peer: PeerRef
            var host: String
            var stranger: Bool
            var deadline: ContinuousClock.Instant
        }
        var summary: Summary { Summary(peer: peer, host: host, stranger: stranger, deadline: deadline) }

        mutating func set(_ key: String, _ state: Offered.State) {
            guard let old = files[key]?.state, old != state else { return }
            func open(_ state: Offered.State) -> Bool { state == .waiting || state == .receiving }
            if open(old), !open(state) { unsettled -= 1 } else if !open(old), open(state) { unsettled += 1 }
            if old == .receiving { receiving -= 1 }
            if state == .receiving { receiving += 1 }
            files[key]?.state = state
        }
    }

    let me: DeviceMessage
    let policy: LocalSendPolicy
    let events: any EventSink
    let known: LocalSendKnownDevices
    /// Sessions by ID (at most `LocalSendSessions.limits.sessions` unfinished at once).
    var sessions: [String: Session] = [:]
    /// The strangers' partial files and their quota, shared with nearby's own receiver's rules.
    let partials: PartialFiles
    /// Transfers waiting for `nearby accept`, oldest first, and `nearby accept` commands waiting for a transfer.
    var asking: [Waiting] = []
    /// (Behind a lock, not the actor: a client's socket closing ends its wait from NIO's thread.)
    nonisolated let answerers = Locked(Answerers())
    private var answered = false
    /// Wrong PINs by sender address, since the first (`checkPIN`).
    private var wrongPINs: [String: (count: Int, since: ContinuousClock.Instant)] = [:]
    /// A transfer was answered (accepted or declined) by the policy or a person.
    var hasAnswered: Bool { answered }
    package nonisolated let ended: AsyncStream<NearbyError?>
    private let endedFeed: AsyncStream<NearbyError?>.Continuation
    /// Sessions this node ended early, for their senders' `/cancel` (`LocalSendReceivingNode` sends them).
    package nonisolated let cancels: AsyncStream<SenderCancel>
    let cancelFeed: AsyncStream<SenderCancel>.Continuation

    package init(
        me: DeviceMessage, policy: LocalSendPolicy, events: any EventSink, known: LocalSendKnownDevices,
        partials: PartialFiles = PartialFiles(limits: .from(environment: ProcessInfo.processInfo.environment))
    ) {
        self.partials = partials
        var me = me
        me.announce = nil
        self.me = me
        self.policy = policy
        self.events = events
        self.known = known
        (ended, endedFeed) = AsyncStream.makeStream(of: NearbyError?.self, bufferingPolicy: .bufferingNewest(1))
        (cancels, cancelFeed) = AsyncStream.makeStream(of: SenderCancel.self, bufferingPolicy: .bufferingNewest(LocalSendSessions.limits.sessions * 2))
    }

    package func handle(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer {
        let prefix = LocalSendDefaults.apiPrefix
        do {
            switch (request.method, request.path) {
            case (.GET, prefix + "/info"), (.GET, "/api/localsend/v1/info"):
                // v1's route too: official apps up to 1.17 probe an unknown device there.
                return LocalSendAnswer(status: 200, body: me.encoded())
            case (.POST, prefix + "/register"):
                guard try await body.whole(limit: LocalSendLimits.datagramBytes) != nil else { return .status(413, keepAlive: false) }
                return LocalSendAnswer(status: 200, body: me.encoded())
            case (.POST, prefix + "/prepare-upload"):
                // The PIN before the body, as the official app checks it: a wrong one costs nothing more.
                if var refused = checkPIN(request) {
                    try await drain(body, limit: policy.list.bodyBytes)
                    refused.keepAlive = false
                    return refused
                }
                // Read as it arrives, each file charged as it is read (Receiver+List).
                switch try await readList(request, body: body) {
                case let .failure(refused): return refused.answer
                case let .success(offer):
                    // Read whole: the sender now waits for our answer, perhaps a person's.
                    body.hold(Self.askFor + .seconds(5))
                    return await prepare(offer, request: request)
                }
            case (.POST, prefix + "/upload"):
                return await upload(request, body: body)
            case (.POST, prefix + "/cancel"):
                _ = try await body.whole(limit: 1024)
                return cancel(request)
            default:
                return .status(404, keepAlive: false)
            }
        } catch {
            return .status(400, "the request ended early", keepAlive: false)
        }
    }

    func prepare(_ offer: Offer, request: LocalSendRequest) async -> LocalSendAnswer {
        let device = LocalSendDevice(offer.info, host: request.host, interface: nil)
        let peer = device.ref
        let pinned = isPinned(device, shown: request.clientFingerprint)
        if let busy = admitSession(from: request.host, pinned: pinned) { return busy }
        let invitation = "ls-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let count = offer.files.count
        let total = offer.total
        // A stranger's (--auto-accept takes it) was charged to the strangers' quota as its list was read.
        let stranger = policy.autoAccept && !pinned
        if stranger, let over = overQuota(bytes: total, files: count) { return over }
        let context = "LocalSend: \(count) file\(count == 1 ? "" : "s"), \(total) bytes"
        let expires = EventEncoder.timestamp(Date())
        let text = Self.text(offer)
        /// Declined; `ending` is how a node-less `accept` ends for it (nil: it keeps waiting).
        func decline(_ reason: String, ending: NearbyError?? = .none) -> LocalSendAnswer {
            events.emit(Events.Invitation.make(invitation: invitation, peer: peer, context: context, expires: expires, answeredBy: "policy"))
            events.emit(Events.Declined.make(invitation: invitation, peer: peer, reason: reason))
            if case let .some(outcome) = ending, policy.acceptFirst || policy.declineFirst { finish(outcome) }
            return .status(403, reason)
        }
        let name = peer.name ?? peer.id
        if let shown = request.clientFingerprint, !LocalSendIdentity.sameFingerprint(shown, device.fingerprint) {
            // A sender that showed a certificate (the official apps do) must be the fingerprint it announced.
            return decline("refused: its TLS certificate is not the fingerprint it announced")
        }
        // A node-less accept waits for the sender it names (--from); others are declined, and it waits on.
        let wanted = policy.acceptFrom.isEmpty || policy.acceptFrom.contains(where: device.matches)
        if policy.acceptFirst || policy.declineFirst {
            if !wanted { return decline("not accepted: this node waits for a transfer from \(policy.acceptFrom.joined(separator: ", "))") }
            if answered { return decline("not accepted: this node has answered its one transfer") }
        }
        if policy.declineFirst {
            answered = true
            return decline("declined by nearby accept --decline", ending: .some(nil))
        }
        if policy.saveDirectory == nil, text == nil {
            return decline("this node takes no files (no --save-dir)", ending: .transferFailed(
                path: "the transfer from \(name)", code: .noSaveDir, reason: "refused: this node takes no files (no --save-dir)"))
        }
        if let pinnedTo = known.pinned(alias: device.alias), !LocalSendIdentity.sameFingerprint(pinnedTo, device.fingerprint) {
            // As the official app, a device is its certificate: a known alias with another
            // fingerprint is another device (a reinstalled phone, two phones of one name). Refused
            // only where the alias itself is what was trusted (--accept-from NAME, accept --from
            // NAME); else a warning, and it is taken as the device it is: a stranger under
            // --auto-accept, or put to a person.
            let change = known.changeSentence(alias: device.alias, pinned: pinnedTo, now: device.fingerprint)
            if trustedByAliasOnly(device) {
                Console(verbose: true).error(change)
                return decline(change, ending: .keyChanged(peer: "LocalSend sender '\(name)'", knownPeers: known.path))
            }
            events.emit(Events.FingerprintChanged(peer: peer, previous: pinnedTo.uppercased(), fingerprint: device.fingerprint.uppercased(), reason: change))
        }
        let allowed = policy.autoAccept || (policy.acceptFirst && wanted) || policy.acceptFrom.contains(where: device.matches)
        var by = policy.autoAccept ? "--auto-accept" : policy.acceptFirst ? "nearby accept" : "--accept-from"
        if allowed {
            events.emit(Events.Invitation.make(invitation: invitation, peer: peer, context: context, expires: expires, answeredBy: "policy"))
        } else {
            // Neither policy takes it: a person answers with `nearby accept [--decline]` (Receiver+Asking).
            switch await ask(Asked(id: invitation, device: device, context: context)) {
            case .accepted: by = "nearby accept"
            case .declined: return .status(403, "Rejected")
            case .expired: return .status(403, "not answered in time")
            case .withdrawn: return .status(403, "withdrawn")
            case .full: return .status(429, "too many transfers wait for an answer")
            }
            if let busy = admitSession(from: request.host, pinned: pinned) { return busy }
        }
        answered = true
        if by != "nearby accept" || allowed {
            events.emit(Events.Accepted.make(invitation: invitation, peer: peer, by: by))
        }
        known.remember(alias: device.alias, fingerprint: device.fingerprint)
        if let text {
            events.emit(Events.Message.make(text: text, from: peer))
            if policy.acceptFirst { finish(nil) }
            return .status(204)
        }
        var files: [String: Offered] = [:]
        for entry in offer.files {
            let (key, file) = (entry.key, entry.file)
            // A folder's files come with relative paths: the shape is kept, each part sanitized.
            let parts = SafePath.components(of: file.fileName)
            let name = parts.last ?? "unnamed"
            files[key] = Offered(
                id: key, token: UUID().uuidString.lowercased(), name: name, folders: Array(parts.dropLast()), size: file.size,
                sha256: file.sha256.flatMap { $0.count == 64 ? $0.lowercased() : nil }, dates: file.metadata?.dates, state: .waiting)
        }
        // A UUID, as the official app's session IDs and tokens are.
        let id = UUID().uuidString.lowercased()
        sessions[id] = Session(
            id: id, host: request.host, peer: peer, files: files, deadline: LocalSendSessions.deadline(for: total), sender: Self.cancelTarget(device, shown: request.clientFingerprint), pinned: pinned, stranger: stranger,
            unsettled: files.count)
        let tokens = files.mapValues(\.token)
        let answer = (try? JSONEncoder().encode(["sessionId": AnyCodableString.string(id), "files": .map(tokens)])).map(Array.init) ?? []
        return LocalSendAnswer(status: 200, body: answer)
    }

    /// A LocalSend text: one `text/*` file whose preview is the text.
    static func text(_ offer: Offer) -> String? {
        guard offer.files.count == 1, let file = offer.files.first?.file, file.fileType?.hasPrefix("text/") == true,
              let preview = file.preview, preview.utf8.count == file.size else { return nil }
        return preview
    }

    func upload(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer {
        guard let id = request.query["sessionId"], let fileID = request.query["fileId"], let token = request.query["token"] else {
            return .status(400, "Missing parameters", keepAlive: false)
        }
        expireSlow()
        // What the upload needs, read in a closure: a copy of the session held while it is
        // changed below would copy its whole file map.
        let found = sessions[id].flatMap { current -> (file: Offered, session: Session.Summary)? in
            guard current.host == request.host, let file = current.files[fileID], file.token == token, file.state == .waiting else { return nil }
            return (file, current.summary)
        }
        guard let (file, current) = found, let directory = policy.saveDirectory else {
            return .status(403, "Invalid token or IP address", keepAlive: false)
        }
        if let length = request.contentLength, length != Int(clamping: file.size) {
            sessions[id]?.set(fileID, .failed)
            let reason = "Content-Length \(length) is not the size announced (\(file.size))"
            events.emit(Events.FileFailed.make(
                transfer: "ls-\(id.prefix(8))-\(fileID)", direction: "receive", peer: current.peer, path: file.name,
                code: "too-large", reason: reason))
            if sessions[id]?.finished == true, policy.acceptFirst { finish(.transferFailed(path: file.name, code: .tooLarge, reason: reason)) }
            return .status(400, reason, keepAlive: false)
        }
        sessions[id]?.set(fileID, .receiving)
        sessions[id]?.lastActivity = .now
        let incoming = IncomingUpload(
            root: directory, folders: file.folders, name: file.name, partialTag: String(id.prefix(8)) + "-" + String(fileID.prefix(16).filter { $0.isLetter || $0.isNumber }),
            size: file.size, sha256: file.sha256, dates: file.dates, peer: current.peer, owner: current.stranger ? current.host : nil, partials: partials,
            deadline: current.stranger ? current.deadline : .now + .seconds(86400 * 365), events: events)
        let outcome = await incoming.receive(body)
        guard sessions[id] != nil else { return .status(409, "the transfer was cancelled") }
        sessions[id]?.files[fileID]?.attempts += 1
        if let outcome, outcome.error.transferCode == .integrity, (sessions[id]?.files[fileID]?.attempts ?? Self.maxAttempts) < Self.maxAttempts {
            // As the official app: the sender may upload it again with the same token.
            sessions[id]?.set(fileID, .waiting)
            sessions[id]?.lastActivity = .now
            return outcome.answer
        }
        sessions[id]?.set(fileID, outcome == nil ? .done : .failed)
        sessions[id]?.lastActivity = .now
        if let outcome, sessions[id]?.failure == nil { sessions[id]?.failure = outcome.error }
        if outcome?.error.transferCode == .timeout, let slow = sessions[id] { expire(slow, reason: outcome?.error.errorDescription ?? "too slow") }
        if sessions[id]?.finished == true {
            if policy.acceptFirst { finish(sessions[id]?.failure) }
            sessions[id] = nil
        }
        return outcome?.answer ?? .status(200)
    }

    /// `cancel` is answered 200 whatever it names (as the official app): a session of this sender
    /// ends; without a session ID, the transfer it offered that still waits for an answer is withdrawn.
    func cancel(_ request: LocalSendRequest) -> LocalSendAnswer {
        guard let id = request.query["sessionId"], let current = sessions[id], current.host == request.host else {
            if request.query["sessionId"] == nil { withdraw(from: request.host) }
            return .status(200)
        }
        sessions[id] = nil
        let pending = current.files.values.filter { $0.state == .waiting || $0.state == .receiving }
        for file in pending where file.state == .waiting {
            events.emit(Events.FileFailed.make(
                transfer: "ls-\(current.id.prefix(8))-\(file.id)", direction: "receive", peer: current.peer, path: file.name,
                code: "cancelled", reason: "the sender cancelled"))
        }
        if policy.acceptFirst { finish(pending.isEmpty ? current.failure : .connectionFailed("\(current.peer.name ?? current.peer.id) cancelled the transfer before every file arrived")) }
        return .status(200)
    }

    /// Wrong PINs from one address before it is refused (429) for `pinLockout`, as the official app's 3.
    static let maxPINAttempts = 3
    static let pinLockout: Duration = .seconds(60)

    /// Nil when the request may go on; else the answer: 401 (none or wrong) or 429 (too many wrong).
    func checkPIN(_ request: LocalSendRequest) -> LocalSendAnswer? {
        guard let pin = policy.pin else { return nil }
        let now = ContinuousClock.now
        if let entry = wrongPINs[request.host], now - entry.since > Self.pinLockout { wrongPINs[request.host] = nil }
        if let entry = wrongPINs[request.host], entry.count >= Self.maxPINAttempts { return .status(429, "Too many requests") }
        guard let given = request.query["pin"] else { return .status(401, "PIN required") }
        if given == pin {
            wrongPINs[request.host] = nil
            return nil
        }
        // Bounded: the oldest address is forgotten first.
        if wrongPINs[request.host] == nil, wrongPINs.count >= 256, let oldest = wrongPINs.min(by: { $0.value.since < $1.value.since }) {
            wrongPINs[oldest.key] = nil
        }
        wrongPINs[request.host, default: (0, now)].count += 1
        return .status(401, "Invalid PIN")
    }

    /// Uploads of one file, the first and the retries after a SHA-256 mismatch (the official app's 3).
    static let maxAttempts = 3

    /// How long an accepted session may wait for its next upload before another sender may take its place.
    static let sessionIdle: Duration = .seconds(30)

    func expire(_ current: Session, reason: String) {
        sessions[current.id] = nil
        tellSender(current)
        for file in current.files.values where file.state == .waiting {
            events.emit(Events.FileFailed.make(
                transfer: "ls-\(current.id.prefix(8))-\(file.id)", direction: "receive", peer: current.peer, path: file.name,
                code: "timeout", reason: reason))
        }
    }

    private func finish(_ failure: NearbyError?) {
        endedFeed.yield(failure)
    }
}

/// `{"sessionId": "…", "files": {"id": "token"}}` without a dictionary of Any.
enum AnyCodableString: Encodable {
    case string(String)
    case map([String: String])
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .string(value): try container.encode(value)
        case let .map(value): try container.encode(value)
        }
    }
}
