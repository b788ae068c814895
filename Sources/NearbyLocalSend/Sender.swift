import Crypto
import Foundation
import NIOHTTP1
import NearbyCore
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

    package init(http: LocalSendHTTP, me: DeviceMessage, events: any EventSink) {
        self.http = http
        var me = me
        me.announce = nil
        self.me = me
        self.events = events
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
    }

    /// The files, offered, accepted and uploaded (`parallelUploads` at once). `timeout` bounds the wait
    /// for the device's answer (a person decides on the other side).
    package func sendFiles(_ files: [OutgoingFile], to target: LocalSendTarget, pin: String?, timeout: Duration) async throws(NearbyError) {
        var offers: [Offer] = []
        // A folder's files go with their paths under the folder's name, as the official app sends
        // them; LocalSend has no empty folders, so those stay behind, each said.
        for empty in files where empty.directory == true {
            events.emit(Events.Skipped(path: empty.relative, reason: "an empty folder: LocalSend carries files only"))
        }
        for (index, file) in files.filter({ $0.directory != true }).enumerated() {
            offers.append(Offer(id: "f\(index + 1)", file: file, sha256: try await Self.sha256(of: file)))
        }
        let body = Self.prepareBody(info: me, offers: offers.map { ($0.id, $0.file.relative, $0.file.size, $0.sha256, Self.mediaType($0.file.relative), nil) })
        let (target, answer) = try await prepare(body, to: target, pin: pin, timeout: timeout, files: offers.count)
        guard let answer else {
            throw .declined(peer: Self.name(target), reason: "it took none of the files (204: nothing to transfer)")
        }
        let refused = offers.filter { answer.files[$0.id] == nil }
        let accepted = offers.compactMap { offer in answer.files[offer.id].map { (offer, $0) } }
        let progress = Watchdog()
        progress.arm(Self.uploadIdle)
        do {
            let queue = UploadQueue(accepted)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<min(Self.parallelUploads, accepted.count) {
                    group.addTask { try await lane(queue, session: answer.sessionId, to: target, progress: progress) }
                }
                try await group.waitForAll()
            }
        } catch {
            // Whatever stopped it, the device's session ends too (it would wait for the rest).
            await cancel(answer.sessionId, at: target)
            if Task.isCancelled { throw .cancelled("sending to \(Self.name(target))") }
            throw (error as? NearbyError) ?? .connectionFailed(ErrorWords.describe(error))
        }
        if !refused.isEmpty {
            throw .declined(peer: Self.name(target), reason: "it took \(offers.count - refused.count) of \(offers.count) files, not \(refused.map(\.file.relative).joined(separator: ", "))")
        }
    }

    /// A text, the way LocalSend apps send one: a `text/plain` file whose preview is the text. A
    /// device that shows it from the preview answers 204; one that wants it uploaded gets it.
    package func sendText(_ text: String, to target: LocalSendTarget, pin: String?, timeout: Duration) async throws(NearbyError) {
        let bytes = Array(text.utf8)
        let sha = Hex.encode(SHA256.hash(data: bytes))
        let body = Self.prepareBody(info: me, offers: [("t1", "message.txt", UInt64(bytes.count), sha, "text/plain", text)])
        let (target, answer) = try await prepare(body, to: target, pin: pin, timeout: timeout, files: 1)
        if let answer, let token = answer.files["t1"] {
            let response: LocalSendHTTP.Response
            do {
                response = try await http.request(
                    host: target.host, port: target.port, https: target.https, method: .POST,
                    path: Self.uploadPath(session: answer.sessionId, file: "t1", token: token), body: .json(bytes),
                    expectedFingerprint: target.fingerprint, timeout: timeout)
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
        do {
            response = try await http.request(
                host: target.host, port: target.port, https: target.https, method: .POST, path: path, body: .json(body),
                expectedFingerprint: target.fingerprint, timeout: timeout, answerLimit: LocalSendLimits.jsonBodyBytes + files * 256)
        } catch {
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
        case 422: .transferFailed(path: "the file sent to \(who)", code: "integrity", reason: "it arrived damaged: its SHA-256 did not match")
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

    /// The `prepare-upload` body: our info and each file's id, name, size, type and SHA-256.
    static func prepareBody(info: DeviceMessage, offers: [(String, String, UInt64, String, String, String?)]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        struct FileOffer: Encodable {
            var id: String
            var fileName: String
            var size: UInt64
            var fileType: String
            var sha256: String
            var preview: String?
        }
        struct Prepare: Encodable {
            var info: DeviceMessage
            var files: [String: FileOffer]
        }
        var files: [String: FileOffer] = [:]
        for (id, name, size, sha, type, preview) in offers {
            files[id] = FileOffer(id: id, fileName: name, size: size, fileType: type, sha256: sha, preview: preview)
        }
        return (try? Array(encoder.encode(Prepare(info: info, files: files)))) ?? []
    }

    /// The media type LocalSend shows an icon for. Never `text/*` for a file: some receivers take a
    /// lone text file for a text message and print it instead of saving it.
    static func mediaType(_ name: String) -> String {
        let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return switch ext {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "heic": "image/heic"
        case "webp": "image/webp"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "mp3": "audio/mpeg"
        case "pdf": "application/pdf"
        case "zip": "application/zip"
        default: "application/octet-stream"
        }
    }

    /// SHA-256 of a file, read on the core's blocking pool (`Transfer.hash`): Ctrl-C stops it at
    /// the next block rather than waiting for a whole file.
    static func sha256(of file: OutgoingFile) async throws(NearbyError) -> String {
        let source = file.source
        let opened = try? await Blocking.run { _ -> Int32 in open(source, O_RDONLY | O_CLOEXEC) }
        guard let fd = opened, fd >= 0 else { throw .ioFailure(path: source, reason: "cannot open it") }
        defer { close(fd) }
        guard let hasher = await Transfer.hash(fd, count: file.size) else {
            if Task.isCancelled { throw .cancelled("reading \(source)") }
            throw .ioFailure(path: source, reason: "it changed while being read")
        }
        var status = stat()
        guard fstat(fd, &status) == 0, UInt64(status.st_size) == file.size else {
            throw .ioFailure(path: source, reason: "it changed while being read")
        }
        return Hex.encode(hasher.finalize())
    }
}
