import Crypto
import Foundation
import NearbyCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file a LocalSend sender uploads, landing through the core's receive-to-disk path: a private
/// partial file beside the final name, written and hashed by the core's `FileWriter` (its own
/// queues, never the cooperative pool), charged to the strangers' quota (`PartialFiles`: count,
/// bytes, lifetime; the quota may take it back while it is written), never more bytes than
/// announced, the SHA-256 checked when the sender gave one, then a rename that overwrites nothing
/// (`name (1).ext`). The partial is named as a stranger's that cannot be resumed
/// (`Transfer.unresumable`), so a later run deletes one a crash left. However it fails, nothing is
/// left under the final name and the partial file is removed.
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
    func receive(_ body: BodyReader, budget: ResourceBudget = .shared) async -> Failure? {
        // A LocalSend sender is charged as any stranger is: its open file counts against the node's
        // descriptor budget and the strangers' share of it, refused (busy) rather than EMFILE.
        let account = budget.account()
        account.markStranger()
        let charge: ResourceBudget.Charge
        switch account.takeFile() {
        case let .success(taken): charge = taken
        case let .failure(refusal):
            return fail(.transferFailed(path: relative, code: "busy", reason: "this node has no room for one more open file (\(refusal))"), status: 429, keepAlive: false)
        }
        let partial = "\(directory)/" + Transfer.partialName(of: name, key: partialTag, from: "localsend", alone: Transfer.unresumable, stranger: true)
        let (root, directory, owner, partials) = (root, directory, owner, partials)
        let opened = try? await Blocking.run { _ -> Int32 in
            if directory != root {
                do throws(NearbyError) { try partials.makeDirectories(directory, below: root, owner: owner ?? "") } catch { return -EACCES }
            }
            let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            return fd >= 0 ? fd : -errno
        }
        guard let fd = opened, fd >= 0 else {
            charge.release()
            let code = opened.map { -$0 } ?? EIO
            return fail(.ioFailure(path: partial, reason: Transfer.errorText(code)), status: 500, keepAlive: false)
        }
        _ = partials.claim(partial)
        let writer = FileWriter(descriptor: fd, charge: charge)
        let stopped = OneShot<Void>()
        if let owner { partials.begin(partial, owner: owner, bytes: 0) { stopped.settle(()) } }
        /// Gives up: the partial file goes (once every queued write is done), the sender hears why.
        func drop(_ error: NearbyError, status: Int, keepAlive: Bool = false) async -> Failure {
            writer.close()
            _ = await writer.finish()
            _ = try? await Blocking.run { _ in unlink(partial) }
            partials.gone(partial, deleted: true)
            partials.release(partial)
            return fail(error, status: status, keepAlive: keepAlive)
        }
        events.emit(Events.FileStarted.make(transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: size))
        var received: UInt64 = 0
        let started = ContinuousClock.now
        var lastProgress = started
        let who = peer.name ?? peer.id
        do {
            while let chunk = try await body.chunk() {
                let count = UInt64(chunk.readableBytes)
                guard received + count <= size else {
                    return await drop(.transferFailed(path: relative, code: "too-large", reason: "\(who) sent more than the \(size) bytes it announced"), status: 400)
                }
                if stopped.isSettled {
                    return await drop(.transferFailed(path: relative, code: "quota", reason: "this node's room for unfinished files from senders it does not know is full"), status: 507)
                }
                if ContinuousClock.now > deadline {
                    return await drop(.transferFailed(path: relative, code: "timeout", reason: "\(who) sent \(name) too slowly (\(received) of \(size) bytes): the transfer was ended"), status: 408)
                }
                let failure = await writer.write(chunk, at: received)
                guard failure == 0 else { return await drop(.ioFailure(path: partial, reason: Transfer.errorText(failure)), status: 500) }
                received += count
                if owner != nil { partials.grew(partial, by: Int(count)) }
                if ContinuousClock.now - lastProgress >= Transfer.progressInterval || received == size {
                    lastProgress = .now
                    events.emit(Events.Progress(
                        transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: received, total: size,
                        rate: Transfer.rate(received, Transfer.seconds(since: started))))
                }
            }
        } catch {
            return await drop(.connectionFailed("\(who) stopped sending \(name) after \(received) of \(size) bytes"), status: 400)
        }
        guard received == size else {
            return await drop(.transferFailed(path: relative, code: "incomplete", reason: "\(received) of the \(size) bytes \(who) announced arrived"), status: 400)
        }
        let (hasher, failure) = await writer.finish()
        guard failure == 0 else { return await drop(.ioFailure(path: partial, reason: Transfer.errorText(failure)), status: 500) }
        let digest = Hex.encode(hasher.finalize())
        if let sha256, sha256.lowercased() != digest {
            // 422, as the official app answers it: the sender may send the file again.
            return await drop(.transferFailed(path: relative, code: "integrity", reason: "its SHA-256 is not the one \(who) announced"), status: 422, keepAlive: true)
        }
        // Every write is done: the descriptor is ours again. Placed with the mode nearby's own
        // files get (0666 less the umask), not the partial's 0600; off the cooperative pool.
        let placedName = name
        let placing = try? await Blocking.run { _ -> Result<String, NearbyError> in
            _ = fchmod(fd, Transfer.finishedMode)
            let synced = fsync(fd) == 0
            close(fd)
            guard synced else { return .failure(.ioFailure(path: partial, reason: "the disk did not confirm the write (fsync failed)")) }
            do throws(NearbyError) { return .success(try SafePath.placeWithoutOverwriting(partial, in: directory, as: placedName)) } catch {
                return .failure(error)
            }
        }
        charge.release()
        let placed: String
        switch placing {
        case let .success(path)?: placed = path
        case let .failure(error)?:
            unlink(partial)
            partials.gone(partial, deleted: true)
            partials.release(partial)
            return fail(error, status: 500, keepAlive: false)
        case nil:
            unlink(partial)
            partials.gone(partial, deleted: true)
            partials.release(partial)
            return fail(.cancelled("the node is stopping"), status: 500, keepAlive: false)
        }
        partials.gone(partial, deleted: false)
        partials.release(partial)
        events.emit(Events.FileReceived.make(
            transfer: transfer, peer: peer, path: placed, bytes: size, sha256: digest, seconds: Transfer.seconds(since: started)))
        return nil
    }

    private func fail(_ error: NearbyError, status: Int, keepAlive: Bool) -> Failure {
        let reason = error.errorDescription ?? error.code
        events.emit(Events.FileFailed.make(transfer: transfer, direction: "receive", peer: peer, path: relative, code: error.code, reason: reason))
        return Failure(error: error, answer: .status(status, reason, keepAlive: keepAlive))
    }
}
