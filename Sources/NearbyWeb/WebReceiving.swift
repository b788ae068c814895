import NIOCore
import NearbyBase
import NearbyTransfer

/// Where a browser's uploaded file goes: the seam between the web pages and the node's one
/// receive-to-disk path (`DiskReceiving`, the core's `StrangerUpload`).
package protocol WebReceiving: Sendable {
    /// A file begins: `name` is what the browser sent (untrusted), `address` who sent it.
    func begin(name: String, from address: String, transfer: String) async throws(NearbyError) -> any WebIncomingFile
}

package protocol WebIncomingFile: AnyObject, Sendable {
    var name: String { get }
    func write(_ bytes: ByteBuffer) async throws(NearbyError)
    /// Placed under its final name (returned); the partial file is gone.
    func finish() async throws(NearbyError) -> String
    /// Given up: the partial file is removed, nothing is left under any name.
    func abandon(_ error: NearbyError) async
}

/// A stranger's upload on disk, as any stranger's file arrives (`StrangerUpload`: a private partial
/// in the save directory, written by the core's `FileWriter` off the cooperative pool, renamed only
/// when the part ended whole and never over an existing file), at most `maxBytes` (the strangers'
/// partial-bytes quota, `NEARBY_PARTIAL_BYTES`), charged to the browser's address in the node's
/// `PartialFiles` — the same account a LocalSend sender from that address has. The files an
/// address leaves are counted (`counts`, at most `NEARBY_WEB_FILES_PER_ADDRESS`: then `quota`), and
/// a name starting with '.' is refused (`refused`) unless `allowDotfiles`.
package struct DiskReceiving: WebReceiving {
    package let directory: String
    package let maxBytes: UInt64
    package let budget: ResourceBudget
    package let partials: PartialFiles
    package let counts: WebUploadCounts
    package let allowDotfiles: Bool
    package let events: any EventSink

    package init(
        directory: String, partials: PartialFiles, counts: WebUploadCounts = WebUploadCounts(), allowDotfiles: Bool = false,
        budget: ResourceBudget = .shared, events: any EventSink
    ) {
        self.directory = directory
        self.maxBytes = partials.limits.bytes
        self.budget = budget
        self.partials = partials
        self.counts = counts
        self.allowDotfiles = allowDotfiles
        self.events = events
    }

    package func begin(name claimed: String, from address: String, transfer: String) async throws(NearbyError) -> any WebIncomingFile {
        // Only the base name: no directory, no `..`, no control characters (SafePath's rules).
        let name = SafePath.components(of: claimed).last ?? "unnamed"
        let peer = PeerRef.browser(address)
        let upload: StrangerUpload
        do throws(NearbyError) {
            if !allowDotfiles, name.hasPrefix(".") {
                throw NearbyError.transferFailed(
                    path: name, code: .refused,
                    reason: "a name starting with '.' (a hidden file) is not taken here unless nearby runs with --allow-dotfiles")
            }
            guard counts.reserve(address) else {
                throw NearbyError.transferFailed(
                    path: name, code: .quota,
                    reason: "this device took the \(counts.perAddress) files it takes from \(address); it takes no more from it")
            }
            do throws(NearbyError) {
                upload = try await StrangerUpload.begin(
                    name, in: directory, below: directory, key: transfer, from: "web", owner: address, partials: partials, budget: budget)
            } catch {
                counts.release(address)
                throw error
            }
        } catch {
            events.emit(Events.FileFailed.make(
                transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: error.errorDescription ?? error.code))
            throw error
        }
        return DiskFile(upload: upload, maxBytes: maxBytes, peer: peer, transfer: transfer, events: events) { [counts] in counts.release(address) }
    }
}

final class DiskFile: WebIncomingFile, Sendable {
    let upload: StrangerUpload
    let maxBytes: UInt64
    let peer: PeerRef
    let transfer: String
    let events: any EventSink
    /// The file did not land: its address's count is given back.
    let uncount: @Sendable () -> Void
    private let started = ContinuousClock.now
    private let pacer = Locked(ProgressPacer(since: .now))

    var name: String { upload.name }

    init(upload: StrangerUpload, maxBytes: UInt64, peer: PeerRef, transfer: String, events: any EventSink, uncount: @escaping @Sendable () -> Void) {
        self.upload = upload
        self.uncount = uncount
        self.maxBytes = maxBytes
        self.peer = peer
        self.transfer = transfer
        self.events = events
        // A multipart form gives no part's size ahead of it: said as unknown, not as 0 B.
        events.emit(Events.FileStarted(transfer: transfer, direction: "receive", peer: peer, path: upload.name, bytes: 0, skipped: 0, sizeKnown: false))
    }

    func write(_ bytes: ByteBuffer) async throws(NearbyError) {
        guard upload.received + UInt64(bytes.readableBytes) <= maxBytes else {
            throw .transferFailed(path: name, code: .tooLarge, reason: "larger than the \(maxBytes) bytes a stranger may leave on disk")
        }
        try await upload.write(bytes)
        let received = upload.received
        let due = pacer.withLock { $0.due() }
        if due {
            events.emit(Events.Progress(
                transfer: transfer, direction: "receive", peer: peer, path: name, bytes: received, total: 0,
                rate: Transfer.rate(received, Transfer.seconds(since: started))))
        }
    }

    func finish() async throws(NearbyError) -> String {
        let placed: (path: String, sha256: String)
        do {
            placed = try await upload.finish()
        } catch {
            uncount()
            failed(error)
            throw error
        }
        events.emit(Events.FileReceived.make(
            transfer: transfer, peer: peer, path: placed.path, bytes: upload.received, sha256: placed.sha256,
            seconds: Transfer.seconds(since: started)))
        return placed.path
    }

    func abandon(_ error: NearbyError) async {
        await upload.abandon()
        uncount()
        failed(error)
    }

    private func failed(_ error: NearbyError) {
        events.emit(Events.FileFailed.make(
            transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: error.errorDescription ?? error.code))
    }
}
