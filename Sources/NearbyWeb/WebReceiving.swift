import NIOCore
import NearbyCore
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
/// `PartialFiles` — the same account a LocalSend sender from that address has.
package struct DiskReceiving: WebReceiving {
    package let directory: String
    package let maxBytes: UInt64
    package let budget: ResourceBudget
    package let partials: PartialFiles
    package let events: any EventSink

    package init(directory: String, partials: PartialFiles, budget: ResourceBudget = .shared, events: any EventSink) {
        self.directory = directory
        self.maxBytes = partials.limits.bytes
        self.budget = budget
        self.partials = partials
        self.events = events
    }

    package func begin(name claimed: String, from address: String, transfer: String) async throws(NearbyError) -> any WebIncomingFile {
        // Only the base name: no directory, no `..`, no control characters (SafePath's rules).
        let name = SafePath.components(of: claimed).last ?? "unnamed"
        let peer = PeerRef.browser(address)
        let upload: StrangerUpload
        do {
            upload = try await StrangerUpload.begin(
                name, in: directory, below: directory, key: transfer, from: "web", owner: address, partials: partials, budget: budget)
        } catch {
            events.emit(Events.FileFailed.make(
                transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: error.errorDescription ?? error.code))
            throw error
        }
        return DiskFile(upload: upload, maxBytes: maxBytes, peer: peer, transfer: transfer, events: events)
    }
}

final class DiskFile: WebIncomingFile, Sendable {
    let upload: StrangerUpload
    let maxBytes: UInt64
    let peer: PeerRef
    let transfer: String
    let events: any EventSink
    private let started = ContinuousClock.now
    private let pacer = Locked(ProgressPacer(since: .now))

    var name: String { upload.name }

    init(upload: StrangerUpload, maxBytes: UInt64, peer: PeerRef, transfer: String, events: any EventSink) {
        self.upload = upload
        self.maxBytes = maxBytes
        self.peer = peer
        self.transfer = transfer
        self.events = events
        events.emit(Events.FileStarted.make(transfer: transfer, direction: "receive", peer: peer, path: upload.name, bytes: 0))
    }

    func write(_ bytes: ByteBuffer) async throws(NearbyError) {
        guard upload.received + UInt64(bytes.readableBytes) <= maxBytes else {
            throw .transferFailed(path: name, code: "too-large", reason: "larger than the \(maxBytes) bytes a stranger may leave on disk")
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
        failed(error)
    }

    private func failed(_ error: NearbyError) {
        events.emit(Events.FileFailed.make(
            transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: error.errorDescription ?? error.code))
    }
}
