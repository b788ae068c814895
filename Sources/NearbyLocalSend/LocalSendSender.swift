import Crypto
import Foundation
import NIOHTTP1
import NearbyBase
import NearbyIdentity
import NearbyTransfer

/// Sends files or a text to a LocalSend device (protocol v2, section 4): `prepare-upload` with
/// each file's SHA-256, then one `upload` per file the device accepted, `cancel` when interrupted.
/// The device's answers become nearby's outcomes: 403 declined (exit 3), 401 a PIN, 409 busy,
/// 429 too many requests, no answer in time (exit 4).
package struct LocalSendSender: Sendable {
    let http: LocalSendHTTP
    let me: DeviceMessage
    let events: any EventSink
    /// Told the session the device gave us, so that its `/cancel` is heard (`Sender+Cancel`).
    let watch: LocalSendCancelWatch?

    package init(http: LocalSendHTTP, me: DeviceMessage, events: any EventSink) {
        self.init(http: http, me: me, events: events, watch: nil)
    }

    init(http: LocalSendHTTP, me: DeviceMessage, events: any EventSink, watch: LocalSendCancelWatch?) {
        self.http = http
        var me = me
        me.announce = nil
        self.me = me
        self.events = events
        self.watch = watch
    }

    /// Files uploaded at once: two lanes, as the official app's sender has two upload isolates
    /// (the protocol lets `upload` be called in parallel), each uploading its files one after another
    /// over one kept connection (`lane`). A receiver that serves one connection at a time
    /// (localsend-cli) takes the second lane's when the first's is done: until then that one waits
    /// for its TLS handshake, with nothing written, as long as the first makes progress.
    static let parallelUploads = 2

    /// How long the device may take no bytes of any upload of the session.
    static let uploadIdle: Duration = .seconds(30)

    /// What `prepare-upload` offers for one file.
    struct Offer: Sendable {
        var id: String
        var file: OutgoingFile
        var sha256: String
        /// The file's own dates, sent as `metadata` (the receiver gives them to its copy).
        var dates: LocalSendFileDates? = nil
    }

    /// The files, offered, accepted and uploaded (`parallelUploads` at once). `timeout` bounds the wait
    /// for the device's answer (a person decides on the other side). One file that fails does not
    /// fail the others, as with the official app: they go on, and the outcome counts what arrived
    /// (the first failure's exit status, with the count in words).
    package func sendFiles(_ files: [OutgoingFile], to target: LocalSendTarget, pin: String?, timeout: Duration) async throws(NearbyError) {
        var offers: [Offer] = []
        // A folder's files go with their paths under the folder's name, as the official app sends
        // them; LocalSend has no empty folders, so those stay behind, each said.
        for empty in files where empty.directory == true {
            events.emit(Events.Skipped(path: empty.relative, reason: "an empty folder: LocalSend carries files only"))
        }
        for (index, file) in files.filter({ $0.directory != true }).enumerated() {
            let (sha256, dates) = try await Self.sha256(of: file)
            offers.append(Offer(id: "f\(index + 1)", file: file, sha256: sha256, dates: dates))
        }
        let body = Self.prepareBody(info: me, files: offers.map { Self.fileOffer($0, alone: offers.count == 1) })
        let (target, answer) = try await prepare(body, to: target, pin: pin, timeout: timeout, files: offers.count)
        guard let answer else {
            throw .declined(peer: Self.name(target), reason: "it took none of the files (204: nothing to transfer)")
        }
        watch?.expect(session: answer.sessionId, from: target)
        let refused = offers.filter { answer.files[$0.id] == nil }
        let accepted = offers.compactMap { offer in answer.files[offer.id].map { (offer, $0) } }
        // The receiver's choice: nothing taken is a decline; some left out is not a failure.
        guard !accepted.isEmpty else {
            await cancel(answer.sessionId, at: target)
            throw .declined(peer: Self.name(target), reason: "it took none of the \(offers.count) file\(offers.count == 1 ? "" : "s")")
        }
        sayLeftOut(refused.map(\.file.relative), by: target, took: accepted.count, of: offers.count)
        let progress = Watchdog()
        progress.arm(Self.uploadIdle)
        let queue = UploadQueue(accepted)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<min(Self.parallelUploads, accepted.count) {
                    group.addTask { try await lane(queue, session: answer.sessionId, to: target, progress: progress) }
                }
                try await group.waitForAll()
            }
        } catch {
            // Cancelled, or a certificate that is not the device's: the device's session ends too
            // (it would wait for the rest).
            await cancel(answer.sessionId, at: target)
            if Task.isCancelled { throw .cancelled("sending to \(Self.name(target))") }
            throw (error as? NearbyError) ?? .connectionFailed(ErrorWords.describe(error))
        }
        // Files no lane could take (the device could not be reached again): its session ends.
        let untried = queue.rest()
        if !untried.isEmpty { await cancel(answer.sessionId, at: target) }
        if let outcome = Self.outcome(
            offered: offers.count, refused: refused.map(\.file.relative), failed: queue.failures(), untried: untried.map { $0.0.file.relative },
            target: target)
        {
            throw outcome
        }
    }

    /// The outcome of a batch: nil when every file the device took arrived (those it left out,
    /// `refused`, are its choice); else the first failure's (its exit status), in words that count
    /// what arrived and name what did not.
    static func outcome(offered: Int, refused: [String], failed: [(String, NearbyError)], untried: [String], target: LocalSendTarget) -> NearbyError? {
        let missing = refused.count + failed.count + untried.count
        guard failed.count + untried.count > 0 else { return nil }
        let arrived = offered - missing
        var names = failed.map(\.0) + refused + untried
        let more = names.count > 5 ? ", and \(names.count - 5) more" : ""
        names = Array(names.prefix(5))
        let count = "\(arrived) of \(offered) file\(offered == 1 ? "" : "s") arrived; not \(names.joined(separator: ", "))\(more)"
        guard let (_, first) = failed.first else {
            return .connectionFailed("\(name(target)): \(count): it could not be reached again")
        }
        let reason = first.errorDescription ?? first.code
        return switch first {
        case let .declined(peer, said): .declined(peer: peer, reason: "\(count) (\(said))")
        case let .transferFailed(path, code, said): .transferFailed(path: path, code: code, reason: "\(said); \(count)")
        case let .ioFailure(path, said): .ioFailure(path: path, reason: "\(said); \(count)")
        case .connectionFailed, .invitationTimedOut: .connectionFailed("\(count): \(reason)")
        default: first
        }
    }

    /// A text, the way LocalSend apps send one: a `text/plain` file whose preview is the text. A
    /// device that shows it from the preview answers 204; one that wants it uploaded gets it.
    package func sendText(_ text: String, to target: LocalSendTarget, pin: String?, timeout: Duration) async throws(NearbyError) {
        let bytes = Array(text.utf8)
        let sha = Hex.encode(SHA256.hash(data: bytes))
        let body = Self.prepareBody(info: me, files: [
            FileOffer(id: "t1", fileName: "message.txt", size: UInt64(bytes.count), fileType: "text/plain", sha256: sha, preview: text),
        ])
        let (target, answer) = try await prepare(body, to: target, pin: pin, timeout: timeout, files: 1)
        if let answer, let token = answer.files["t1"] {
            let response: LocalSendHTTP.Response
            do {
                response = try await http.request(
                    host: target.host, port: target.port, https: target.https, method: .POST,
                    path: Self.uploadPath(session: answer.sessionId, file: "t1", token: token), body: .json(bytes),
                    expectedFingerprint: target.fingerprint, timeout: .seconds(30))
            } catch {
                throw Self.nearbyError(error, target: target)
            }
            guard response.status == 200 else { throw Self.refusal(response, target: target, pin: pin) }
        }
        events.emit(Events.Sent.make(peers: [target.ref], bytes: bytes.count))
    }

    struct PrepareAnswer: Decodable {
        var sessionId: String
        var files: [String: String]
    }

    /// `prepare-upload` of `files` files: the device's decision (its answer is bounded by what
    /// `files` tokens take). Nil answer: 204, nothing to send.
    func prepare(
        _ body: [UInt8], to target: LocalSendTarget, pin: String?, timeout: Duration, files: Int
    ) async throws(NearbyError) -> (LocalSendTarget, PrepareAnswer?) {
        var path = LocalSendDefaults.apiPrefix + "/prepare-upload"
        if let pin { path += "?pin=" + Self.query(pin) }
        let response: LocalSendHTTP.Response
        // The device's person may take as long as `timeout` (`personsPace` unless --timeout).
        let asked: Result<LocalSendHTTP.Response, LocalSendHTTP.Failure> = await sayingWaiting(for: target, limit: timeout) {
            do throws(LocalSendHTTP.Failure) {
                return .success(try await http.request(
                    host: target.host, port: target.port, https: target.https, method: .POST, path: path, body: .json(body),
                    expectedFingerprint: target.fingerprint, timeout: timeout, idle: timeout, answerLimit: LocalSendLimits.jsonBodyBytes + files * 256))
            } catch {
                return .failure(error)
            }
        }
        switch asked {
        case let .success(answer): response = answer
        case let .failure(error):
            if Task.isCancelled {
                // Ctrl-C while the device decides: its pending request goes too (the official app
                // takes a `cancel` without a session ID from the address that asked).
                await http.fireAndWait(
                    host: target.host, port: target.port, https: target.https, path: LocalSendDefaults.apiPrefix + "/cancel",
                    expectedFingerprint: target.fingerprint, timeout: .seconds(2))
            }
            throw Self.nearbyError(error, target: target, waited: timeout)
        }
        var target = target
        if target.fingerprint == nil, let seen = response.fingerprint {
            target.fingerprint = seen
            target.ref = PeerRef(id: LocalSendDevice.peerID(fingerprint: seen), name: target.ref.name)
        }
        switch response.status {
        case 200:
            guard JSONShape.depth(of: response.body, limit: LocalSendLimits.jsonDepth) != nil,
                  let answer = try? JSONDecoder().decode(PrepareAnswer.self, from: Data(response.body)),
                  answer.sessionId.utf8.count <= 256, answer.files.count <= files
            else { throw .connectionFailed("\(Self.name(target)) answered prepare-upload with something that is not a LocalSend session") }
            return (target, answer)
        case 204: return (target, nil)
        default: throw Self.refusal(response, target: target, pin: pin)
        }
    }

    /// Tells the device the session is over; waited for at most 2 s, also from a cancelled task.
    func cancel(_ session: String, at target: LocalSendTarget) async {
        await http.fireAndWait(
            host: target.host, port: target.port, https: target.https,
            path: LocalSendDefaults.apiPrefix + "/cancel?sessionId=" + Self.query(session),
            expectedFingerprint: target.fingerprint, timeout: .seconds(2))
    }

    static func uploadPath(session: String, file: String, token: String) -> String {
        LocalSendDefaults.apiPrefix + "/upload?sessionId=\(query(session))&fileId=\(query(file))&token=\(query(token))"
    }

    static func query(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func name(_ target: LocalSendTarget) -> String { target.ref.name ?? "\(target.host):\(target.port)" }

    /// A device's refusal in nearby's words and exit codes.
    static func refusal(_ response: LocalSendHTTP.Response, target: LocalSendTarget, pin: String?) -> NearbyError {
        let who = name(target)
        return switch response.status {
        case 401:
            pin == nil
                ? .declined(peer: who, reason: "it asks for a PIN: send again with --pin PIN")
                : .declined(peer: who, reason: "the PIN given with --pin is wrong")
        case 403: .declined(peer: who, reason: saying(response) ?? "rejected")
        case 409: .connectionFailed("\(who) is busy with another transfer (409); try again when it is done")
        case 429:
            pin == nil
                ? .connectionFailed("\(who) refused: too many requests (429); wait a moment")
                : .connectionFailed("\(who) refused: too many wrong PINs from this address (429); wait a minute, then send with the right --pin")
        case 413: .declined(peer: who, reason: saying(response) ?? "the transfer is larger than it takes")
        case 503: .connectionFailed("\(who) has no room for another upload just now (503): \(saying(response) ?? "it is busy"); try again in a moment")
        case 422: .transferFailed(path: "the file sent to \(who)", code: .integrity, reason: "it arrived damaged: its SHA-256 did not match")
        case 400: .connectionFailed("\(who) could not take what was sent: \(saying(response) ?? "it says the request was invalid")")
        case 408: .connectionFailed("\(who) ended the transfer: \(saying(response) ?? "it was too slow")")
        case 500, 507: .connectionFailed("\(who) failed to store the file on its side: \(saying(response) ?? "it gave no reason")")
        default: .connectionFailed("\(who) refused with status \(response.status)\(saying(response).map { ": \($0)" } ?? "")")
        }
    }

    /// The `message` of a refusal's JSON body, bounded and made safe; nil when there is none.
    static func saying(_ response: LocalSendHTTP.Response) -> String? {
        struct Said: Decodable { var message: String }
        guard response.body.count <= 4096, JSONShape.depth(of: response.body, limit: 2) != nil,
              let said = try? JSONDecoder().decode(Said.self, from: Data(response.body)), !said.message.isEmpty
        else { return nil }
        return TerminalText.escaped(said.message, limit: 200)
    }

    static func nearbyError(_ failure: LocalSendHTTP.Failure, target: LocalSendTarget, waited: Duration? = nil) -> NearbyError {
        switch failure {
        case let .fingerprintMismatch(expected, got):
            return .identityMismatch(expected: "LocalSend fingerprint \(expected)", got: "a certificate of fingerprint \(got)")
        case let .timedOut(reason):
            if let waited { return .invitationTimedOut(peer: name(target), seconds: Double(waited / .milliseconds(1)) / 1000) }
            return .connectionFailed(reason)
        case let .unreachable(reason), let .protocolError(reason), let .closedBeforeAnswer(reason, _):
            if Task.isCancelled { return .cancelled("sending to \(name(target))") }
            return .connectionFailed("\(name(target)): \(reason)")
        case let .io(path, reason):
            return .ioFailure(path: path, reason: reason)
        }
    }

    /// One file as `prepare-upload` offers it (the official app's `FileDto`).
    struct FileOffer: Encodable, Sendable {
        var id: String
        var fileName: String
        var size: UInt64
        var fileType: String
        var sha256: String
        var preview: String?
        var metadata: LocalSendFileDates?
    }

    /// Its type as the app's (`text/plain` for `notes.txt`), but a file sent `alone` is never
    /// `text/*`: the app takes a lone text file for a message only with a `preview` (nearby sends
    /// none for a file), localsend-cli takes any lone `text/*` file for one and prints it, unsaved.
    static func fileOffer(_ offer: Offer, alone: Bool) -> FileOffer {
        var type = mediaType(offer.file.relative)
        if alone, type.hasPrefix("text/") { type = "application/octet-stream" }
        return FileOffer(
            id: offer.id, fileName: offer.file.relative, size: offer.file.size, fileType: type,
            sha256: offer.sha256, metadata: offer.dates?.orNil)
    }

    /// The `prepare-upload` body: our info and each file's id, name, size, type, SHA-256 and dates.
    static func prepareBody(info: DeviceMessage, files: [FileOffer]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        struct Prepare: Encodable {
            var info: DeviceMessage
            var files: [String: FileOffer]
        }
        let map = Dictionary(files.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return (try? Array(encoder.encode(Prepare(info: info, files: map)))) ?? []
    }

    /// The media type LocalSend shows an icon for, and a phone's gallery keeps (`image/*`,
    /// `video/*`), from the system's database (`LocalSendMediaTypes`).
    static func mediaType(_ name: String) -> String { LocalSendMediaTypes.shared.type(of: name) }

    /// SHA-256 of a file, read on the core's blocking pool (`Transfer.hash`): Ctrl-C stops it at
    /// the next block rather than waiting for a whole file.
    static func sha256(of file: OutgoingFile) async throws(NearbyError) -> (String, LocalSendFileDates) {
        let source = file.source
        let opened = try? await Blocking.run { _ -> Int32 in open(source, O_RDONLY | O_CLOEXEC) }
        guard let fd = opened, fd >= 0 else { throw .ioFailure(path: source, reason: "cannot open it") }
        defer { close(fd) }
        // Its dates before it is read: reading it may move its access time.
        var before = stat()
        guard fstat(fd, &before) == 0 else { throw .ioFailure(path: source, reason: "cannot read its status") }
        guard let hasher = await Transfer.hash(fd, count: file.size) else {
            if Task.isCancelled { throw .cancelled("reading \(source)") }
            throw .ioFailure(path: source, reason: "it changed while being read")
        }
        var status = stat()
        guard fstat(fd, &status) == 0, UInt64(status.st_size) == file.size else {
            throw .ioFailure(path: source, reason: "it changed while being read")
        }
        return (Hex.encode(hasher.finalize()), LocalSendFileDates.of(before))
    }
}
