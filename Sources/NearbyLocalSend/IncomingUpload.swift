import NIOCore
import NIOHTTP1
import NearbyBase
import NearbyTransfer
import NearbyHTTP

/// One file a LocalSend sender uploads, landing through the core's receive-to-disk path for
/// strangers' uploads (`StrangerUpload`: a private partial file beside the final name, written by
/// the core's `FileWriter`, charged to the strangers' quota, placed by a rename that overwrites
/// nothing, removed however it fails), never more bytes than announced, no slower than its
/// session's floor rate, the SHA-256 checked when the sender gave one.
struct IncomingUpload: Sendable {
    struct Failure: Sendable, Equatable {
        var error: NearbyError
        var answer: LocalSendAnswer
    }

    /// `--save-dir`.
    let root: String
    /// The folders the file's name gave, below `root` (made as a stranger's directories are).
    let folders: [String]
    let name: String
    let partialTag: String
    let size: UInt64
    let sha256: String?
    /// The sender's dates for the file (`metadata`), set once it is whole and placed.
    var dates: LocalSendFileDates? = nil
    let peer: PeerRef
    /// The account the partial is charged to in the strangers' quota: the sender's address (nil:
    /// not a stranger, not counted, as the core counts only strangers' partials).
    let owner: String?
    let partials: PartialFiles
    /// The upload may not run past this (its session's floor rate).
    let deadline: ContinuousClock.Instant
    let events: any EventSink

    var transfer: String { "ls-" + partialTag }
    var directory: String { ([root] + folders).joined(separator: "/") }
    /// The path as events show it: relative to `--save-dir`.
    var relative: String { (folders + [name]).joined(separator: "/") }

    /// Nil when the file arrived whole; else why not, with the answer for the sender.
    func receive(_ body: HTTPBody, budget: ResourceBudget = .shared) async -> Failure? {
        // A LocalSend sender is charged as any stranger is (`StrangerUpload`): its open file counts
        // against the node's descriptor budget and the strangers' share of it, refused (busy)
        // rather than EMFILE; its bytes against the strangers' quota under its address.
        let upload: StrangerUpload
        do {
            upload = try await StrangerUpload.begin(
                name, in: directory, below: root, key: partialTag, from: "localsend", owner: owner, partials: partials, budget: budget)
        } catch {
            return fail(error, status: Int(HTTPAnswer.status(refusing: error).code), keepAlive: false)
        }
        /// Gives up: the partial file goes (once every queued write is done), the sender hears why.
        func drop(_ error: NearbyError, status: Int) async -> Failure {
            await upload.abandon()
            return fail(error, status: status, keepAlive: false)
        }
        /// Writes `piece`; why not, when it could not.
        func put(_ piece: ByteBuffer) async -> Failure? {
            do throws(NearbyError) { try await upload.write(piece) } catch {
                return await drop(error, status: Int(HTTPAnswer.status(refusing: error).code))
            }
            return nil
        }
        events.emit(Events.FileStarted.make(transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: size))
        var received: UInt64 = 0
        let started = ContinuousClock.now
        var pacer = ProgressPacer(since: started)
        // Written in blocks, as a browser's upload is (`BodyBlocks`).
        var blocks = BodyBlocks()
        let who = peer.name ?? peer.id
        do {
            while let chunk = try await body.chunk() {
                let count = UInt64(chunk.readableBytes)
                guard received + count <= size else {
                    return await drop(.transferFailed(path: relative, code: .tooLarge, reason: "\(who) sent more than the \(size) bytes it announced"), status: 400)
                }
                if ContinuousClock.now > deadline {
                    return await drop(.transferFailed(path: relative, code: .timeout, reason: "\(who) sent \(name) too slowly (\(received) of \(size) bytes): the transfer was ended"), status: 408)
                }
                for due in blocks.add(chunk) {
                    if let failed = await put(due) { return failed }
                }
                received += count
                if pacer.due(final: received == size) {
                    events.emit(Events.Progress(
                        transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: received, total: size,
                        rate: Transfer.rate(received, Transfer.seconds(since: started))))
                }
            }
        } catch {
            return await drop(.connectionFailed("\(who) stopped sending \(name) after \(received) of \(size) bytes"), status: 400)
        }
        guard received == size else {
            return await drop(.transferFailed(path: relative, code: .incomplete, reason: "\(received) of the \(size) bytes \(who) announced arrived"), status: 400)
        }
        if let rest = blocks.rest(), let failed = await put(rest) { return failed }
        let (announced, relative) = (sha256?.lowercased(), relative)
        let placed: (path: String, sha256: String)
        do {
            placed = try await upload.finish { digest in
                guard let announced, announced != digest else { return nil }
                return .transferFailed(path: relative, code: .integrity, reason: "its SHA-256 is not the one \(who) announced")
            }
        } catch {
            // 422 for a damaged file, as the official app answers it: the sender may send it again.
            return fail(error, status: Int(HTTPAnswer.status(refusing: error).code), keepAlive: error.transferCode == .integrity)
        }
        if let dates {
            // A date that does not read, or a file system that refuses it, leaves the time it arrived.
            let path = placed.path
            _ = try? await Blocking.run { _ in LocalSendFileDates.apply(dates, to: path) }
        }
        events.emit(Events.FileReceived.make(
            transfer: transfer, peer: peer, path: placed.path, bytes: size, sha256: placed.sha256, seconds: Transfer.seconds(since: started)))
        return nil
    }

    private func fail(_ error: NearbyError, status: Int, keepAlive: Bool) -> Failure {
        let reason = error.errorDescription ?? error.code
        events.emit(Events.FileFailed.make(transfer: transfer, direction: "receive", peer: peer, path: relative, code: error.code, reason: reason))
        return Failure(error: error, answer: .status(status, reason, keepAlive: keepAlive))
    }
}
