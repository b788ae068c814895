import Crypto
import Foundation
import NearbyCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file a LocalSend sender uploads, landing as nearby's files do: a private partial file
/// beside the final name, never more bytes than announced, the SHA-256 checked when the sender gave
/// one, then a rename that overwrites nothing (`name (1).ext`). However it fails, nothing is left
/// under the final name and the partial file is removed.
struct IncomingUpload: Sendable {
    struct Failure: Sendable, Equatable {
        var error: NearbyError
        var answer: LocalSendAnswer
    }

    let directory: String
    let name: String
    let partialTag: String
    let size: UInt64
    let sha256: String?
    let peer: PeerRef
    let events: any EventSink

    var transfer: String { "ls-" + partialTag }

    /// Nil when the file arrived whole; else why not, with the answer for the sender.
    func receive(_ body: BodyReader, budget: ResourceBudget = .shared) async -> Failure? {
        // A LocalSend sender is charged as any stranger is: its open file counts against the node's
        // descriptor budget and the strangers' share of it, refused (busy) rather than EMFILE.
        let account = budget.account()
        account.markStranger()
        let charge: ResourceBudget.Charge
        switch account.takeFile() {
        case let .success(taken): charge = taken
        case let .failure(refusal):
            return fail(.transferFailed(path: name, code: "busy", reason: "no room for one more open file: \(refusal)"), status: 429, keepAlive: false)
        }
        defer { charge.release() }
        // Named as nearby's partial files are: any legal name keeps it under the name limit.
        let partial = "\(directory)/" + Transfer.partialName(of: name, key: partialTag, from: "localsend")
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            return fail(.ioFailure(path: partial, reason: Transfer.errorText(errno)), status: 500, keepAlive: false)
        }
        /// Gives up: the partial file goes, the sender hears why.
        func drop(_ error: NearbyError, status: Int, keepAlive: Bool = false) -> Failure {
            unlink(partial)
            return fail(error, status: status, keepAlive: keepAlive)
        }
        events.emit(Events.FileStarted.make(transfer: transfer, direction: "receive", peer: peer, path: name, bytes: size))
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        var hasher = SHA256()
        var received: UInt64 = 0
        let started = ContinuousClock.now
        var lastProgress = started
        do {
            while var chunk = try await body.chunk() {
                let count = UInt64(chunk.readableBytes)
                guard received + count <= size else {
                    return drop(.transferFailed(path: name, code: "too-large", reason: "the sender sent more than the \(size) bytes it announced"), status: 400)
                }
                let error = chunk.withUnsafeReadableBytes { bytes -> Int32 in
                    hasher.update(bufferPointer: bytes)
                    return Transfer.pwriteAll(fd, bytes, at: UInt64(received))
                }
                chunk.moveReaderIndex(forwardBy: chunk.readableBytes)
                guard error == 0 else { return drop(.ioFailure(path: partial, reason: Transfer.errorText(error)), status: 500) }
                received += count
                if ContinuousClock.now - lastProgress >= Transfer.progressInterval || received == size {
                    lastProgress = .now
                    events.emit(Events.Progress(
                        transfer: transfer, direction: "receive", peer: peer, path: name, bytes: received, total: size,
                        rate: Transfer.rate(received, Transfer.seconds(since: started))))
                }
            }
        } catch {
            return drop(.connectionFailed("\(peer.name ?? peer.id) stopped sending \(name) after \(received) of \(size) bytes"), status: 400)
        }
        guard received == size else {
            return drop(.transferFailed(path: name, code: "incomplete", reason: "\(received) of the \(size) bytes announced arrived"), status: 400)
        }
        let digest = Hex.encode(hasher.finalize())
        if let sha256, sha256 != digest {
            // 422, as the official app answers it: the sender may send the file again.
            return drop(.transferFailed(path: name, code: "integrity", reason: "its SHA-256 is not the one the sender announced"), status: 422, keepAlive: true)
        }
        // Placed with the mode nearby's own files get (0666 less the umask), not the partial's 0600.
        _ = fchmod(fd, Transfer.finishedMode)
        guard fsync(fd) == 0 else { return drop(.ioFailure(path: partial, reason: "fsync failed"), status: 500) }
        close(fd)
        closed = true
        let placed: String
        do {
            placed = try SafePath.placeWithoutOverwriting(partial, in: directory, as: name)
        } catch {
            return drop(error, status: 500)
        }
        events.emit(Events.FileReceived.make(
            transfer: transfer, peer: peer, path: placed, bytes: size, sha256: digest, seconds: Transfer.seconds(since: started)))
        return nil
    }

    private func fail(_ error: NearbyError, status: Int, keepAlive: Bool) -> Failure {
        let reason = error.errorDescription ?? error.code
        events.emit(Events.FileFailed.make(transfer: transfer, direction: "receive", peer: peer, path: name, code: error.code, reason: reason))
        return Failure(error: error, answer: .status(status, reason, keepAlive: keepAlive))
    }
}
