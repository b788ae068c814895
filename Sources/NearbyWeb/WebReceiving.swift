import Crypto
import NearbyCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a browser's uploaded file goes: the seam between the web pages and the node's one
/// receive-to-disk path. `DiskReceiving` takes the core's pieces — the stranger's account in
/// `ResourceBudget`, the strangers' quota of partial files (`PartialFiles`, which may take a partial
/// back while it is written), an unresumable stranger's partial name (`Transfer.partialName`, so a
/// later run deletes what a crash left), `SafePath.placeWithoutOverwriting`.
package protocol WebReceiving: Sendable {
    /// A file begins: `name` is what the browser sent (untrusted), `address` who sent it.
    func begin(name: String, from address: String, transfer: String) throws(NearbyError) -> any WebIncomingFile
}

package protocol WebIncomingFile: AnyObject, Sendable {
    var name: String { get }
    var received: UInt64 { get }
    func write(_ bytes: UnsafeRawBufferPointer) throws(NearbyError)
    /// Placed under its final name (returned); the partial file is gone.
    func finish() throws(NearbyError) -> String
    /// Given up: the partial file is removed, nothing is left under any name.
    func abandon(_ error: NearbyError)
}

/// A stranger's upload on disk, as nearby's files arrive: a private partial file (0600, O_EXCL, not
/// following links) in the save directory, renamed only when the part ended whole, never over an
/// existing file (`name (1).ext`), at most `maxBytes` (the strangers' partial-bytes quota,
/// `NEARBY_PARTIAL_BYTES`), its open descriptor charged to the stranger's account and its bytes to
/// the strangers' quota under the browser's address.
package struct DiskReceiving: WebReceiving {
    package let directory: String
    package let maxBytes: UInt64
    package let budget: ResourceBudget
    package let partials: PartialFiles
    package let events: any EventSink

    package init(directory: String, maxBytes: UInt64, budget: ResourceBudget = .shared, partials: PartialFiles, events: any EventSink) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.budget = budget
        self.partials = partials
        self.events = events
    }

    /// The strangers' quota of partial bytes, as the core reads it (1 GiB unless `NEARBY_PARTIAL_BYTES`).
    package static func quota(_ environment: [String: String]) -> UInt64 {
        environment["NEARBY_PARTIAL_BYTES"].flatMap(UInt64.init) ?? 1 << 30
    }

    package func begin(name claimed: String, from address: String, transfer: String) throws(NearbyError) -> any WebIncomingFile {
        // Only the base name: no directory, no `..`, no control characters (SafePath's rules).
        let name = SafePath.components(of: claimed).last ?? "unnamed"
        let account = budget.account()
        account.markStranger()
        let charge: ResourceBudget.Charge
        switch account.takeFile() {
        case let .success(taken): charge = taken
        case let .failure(refusal):
            throw .transferFailed(path: name, code: "busy", reason: "no room for one more open file: \(refusal)")
        }
        let partial = "\(directory)/" + Transfer.partialName(of: name, key: transfer, from: "web", alone: Transfer.unresumable, stranger: true)
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            charge.release()
            throw .ioFailure(path: partial, reason: Transfer.errorText(errno))
        }
        _ = partials.claim(partial)
        let stopped = OneShot<Void>()
        partials.begin(partial, owner: "web-" + address, bytes: 0) { _ = stopped.settle(()) }
        return DiskFile(
            name: name, partial: partial, directory: directory, fd: fd, charge: charge, maxBytes: maxBytes,
            peer: .browser(address), transfer: transfer, partials: partials, stopped: stopped, events: events)
    }
}

final class DiskFile: WebIncomingFile, @unchecked Sendable {
    // One task writes a file (the connection's), so the mutable state needs no lock.
    let name: String
    let partial: String
    let directory: String
    let fd: Int32
    let charge: ResourceBudget.Charge
    let maxBytes: UInt64
    let peer: PeerRef
    let transfer: String
    let partials: PartialFiles
    /// Settled when the strangers' quota takes this partial back.
    let stopped: OneShot<Void>
    let events: any EventSink
    private(set) var received: UInt64 = 0
    private var hasher = SHA256()
    private var isOpen = true
    private let started = ContinuousClock.now
    private var lastProgress = ContinuousClock.now

    init(
        name: String, partial: String, directory: String, fd: Int32, charge: ResourceBudget.Charge, maxBytes: UInt64, peer: PeerRef,
        transfer: String, partials: PartialFiles, stopped: OneShot<Void>, events: any EventSink
    ) {
        self.partials = partials
        self.stopped = stopped
        self.name = name
        self.partial = partial
        self.directory = directory
        self.fd = fd
        self.charge = charge
        self.maxBytes = maxBytes
        self.peer = peer
        self.transfer = transfer
        self.events = events
        events.emit(Events.FileStarted.make(transfer: transfer, direction: "receive", peer: peer, path: name, bytes: 0))
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(NearbyError) {
        guard received + UInt64(bytes.count) <= maxBytes else {
            throw .transferFailed(path: name, code: "too-large", reason: "larger than the \(maxBytes) bytes a stranger may leave on disk")
        }
        guard !stopped.isSettled else {
            throw .transferFailed(path: name, code: "quota", reason: "this device's room for unfinished files from browsers and peers it does not know is full")
        }
        let error = Transfer.pwriteAll(fd, bytes, at: received)
        guard error == 0 else { throw .ioFailure(path: partial, reason: Transfer.errorText(error)) }
        partials.grew(partial, by: bytes.count)
        hasher.update(bufferPointer: bytes)
        received += UInt64(bytes.count)
        if ContinuousClock.now - lastProgress >= Transfer.progressInterval {
            lastProgress = .now
            events.emit(Events.Progress(
                transfer: transfer, direction: "receive", peer: peer, path: name, bytes: received, total: 0,
                rate: Transfer.rate(received, Transfer.seconds(since: started))))
        }
    }

    func finish() throws(NearbyError) -> String {
        _ = fchmod(fd, Transfer.finishedMode)
        guard fsync(fd) == 0 else {
            let error = NearbyError.ioFailure(path: partial, reason: "fsync failed")
            abandon(error)
            throw error
        }
        closeOnce()
        let placed: String
        do {
            placed = try SafePath.placeWithoutOverwriting(partial, in: directory, as: name)
        } catch {
            abandon(error)
            throw error
        }
        partials.gone(partial, deleted: false)
        partials.release(partial)
        events.emit(Events.FileReceived.make(
            transfer: transfer, peer: peer, path: placed, bytes: received, sha256: Hex.encode(hasher.finalize()),
            seconds: Transfer.seconds(since: started)))
        return placed
    }

    func abandon(_ error: NearbyError) {
        closeOnce()
        unlink(partial)
        partials.gone(partial, deleted: true)
        partials.release(partial)
        events.emit(Events.FileFailed.make(
            transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: error.errorDescription ?? error.code))
    }

    private func closeOnce() {
        guard isOpen else { return }
        isOpen = false
        close(fd)
        charge.release()
    }

    deinit { closeOnce() }
}
