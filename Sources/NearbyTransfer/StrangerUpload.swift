import NIOCore
import NearbyBase
import NearbyIdentity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file a stranger uploads over another protocol a node serves (LocalSend, a browser), landing
/// through the node's one receive-to-disk path, as a stranger's file from a nearby link does:
/// - a private partial file (0600, `O_EXCL`, not following links) beside the final name, named as a
///   stranger's that cannot be resumed (`Transfer.unresumable`: a later run deletes one a crash left);
/// - its descriptor charged to the stranger's account in the `ResourceBudget` (refused `busy`, never
///   EMFILE), its bytes to the strangers' quota (`PartialFiles`, under `owner`: the sender's address,
///   the same account whatever protocol it uses), which may take it back while it is written;
/// - written and hashed by the core's `FileWriter`, every other disk call (open, fsync, rename,
///   unlink) on the `Blocking` pool: nothing blocks the cooperative pool or an event loop;
/// - placed by a rename that overwrites nothing (`name (1).ext`), only once whole; given up, the
///   partial file is removed and nothing is left under any name.
///
/// One task writes a file (the connection's): `begin`, `write`s, then `finish` or `abandon`.
package final class StrangerUpload: Sendable {
    /// The directory the file lands in, and its base name there (already sanitized by the caller).
    package let directory: String
    package let name: String
    package let partial: String
    let owner: String?
    let partials: PartialFiles
    let writer: FileWriter
    /// Settled when the strangers' quota takes this partial back.
    let stopped = OneShot<Void>()
    private let state = Locked<(received: UInt64, ended: Bool)>((0, false))

    /// Bytes written so far.
    package var received: UInt64 { state.withLock { $0.received } }

    private init(directory: String, name: String, partial: String, owner: String?, partials: PartialFiles, writer: FileWriter) {
        self.directory = directory
        self.name = name
        self.partial = partial
        self.owner = owner
        self.partials = partials
        self.writer = writer
    }

    /// Opens the partial file for `name` in `directory` (made below `root` as a stranger's
    /// directories are, when it is deeper). `key` tells apart two uploads of one name, `from` is the
    /// protocol (in the partial's name); `owner` nil: not counted in the strangers' quota.
    package static func begin(
        _ name: String, in directory: String, below root: String, key: String, from: String, owner: String?,
        partials: PartialFiles, budget: ResourceBudget = .shared
    ) async throws(NearbyError) -> StrangerUpload {
        let account = budget.account()
        account.markStranger()
        let charge: ResourceBudget.Charge
        switch account.takeFile() {
        case let .success(taken): charge = taken
        case let .failure(refusal):
            throw .transferFailed(path: name, code: .busy, reason: "this device has no room for one more open file (\(refusal))")
        }
        let partial = "\(directory)/" + Transfer.partialName(of: name, key: key, from: from, alone: Transfer.unresumable, stranger: true)
        let opened = try? await Blocking.run { _ -> Int32 in
            if directory != root {
                do throws(NearbyError) { try partials.makeDirectories(directory, below: root, owner: owner ?? "") } catch { return -EACCES }
            }
            let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            return fd >= 0 ? fd : -errno
        }
        guard let fd = opened, fd >= 0 else {
            charge.release()
            throw .ioFailure(path: partial, reason: Transfer.errorText(opened.map { -$0 } ?? EIO))
        }
        _ = partials.claim(partial)
        let upload = StrangerUpload(
            directory: directory, name: name, partial: partial, owner: owner, partials: partials,
            writer: FileWriter(descriptor: fd, charge: charge))
        if let owner {
            // Taken back: its descriptor closed at once (the blocks of the unlinked file freed now,
            // not at the sender's next write, which may never come).
            partials.begin(partial, owner: owner, bytes: 0) { [stopped = upload.stopped, writer = upload.writer] in
                stopped.settle(())
                writer.stop()
            }
        }
        return upload
    }

    /// Queues `chunk` after what was written (bounded: `FileWriter` holds at most 8 MiB queued).
    /// Throws `quota` once the strangers' quota took the partial back, `io-error` when a write failed.
    package func write(_ chunk: ByteBuffer) async throws(NearbyError) {
        guard !stopped.isSettled else {
            throw .transferFailed(path: name, code: .quota, reason: "this device's room for unfinished files from senders it does not know is full")
        }
        let count = UInt64(chunk.readableBytes)
        let failure = await writer.write(chunk, at: received)
        guard failure == 0 else { throw .ioFailure(path: partial, reason: Transfer.errorText(failure)) }
        state.withLock { $0.received += count }
        if owner != nil { partials.grew(partial, by: Int(count)) }
    }

    /// Waits for every write, then `check`s the SHA-256 (lowercase hex; an error refuses the file),
    /// makes the file durable (fsync) with the mode nearby's files get, and places it under `name`
    /// or the first free `name (N).ext`. Returns the path and the SHA-256. On any failure the
    /// partial file is removed (as `abandon`) and the error thrown.
    package func finish(check: @Sendable (String) -> NearbyError? = { _ in nil }) async throws(NearbyError) -> (path: String, sha256: String) {
        let (hasher, failure) = await writer.finish()
        guard failure == 0 else { throw await dropped(.ioFailure(path: partial, reason: Transfer.errorText(failure))) }
        let digest = Hex.encode(hasher.finalize())
        if let refusal = check(digest) { throw await dropped(refusal) }
        // Every write is done: the descriptor is idle until `close` queues its closing.
        let (fd, partial, directory, name) = (writer.descriptor, partial, directory, name)
        let placing = try? await Blocking.run { _ -> Result<String, NearbyError> in
            _ = fchmod(fd, Transfer.finishedMode)
            guard fsync(fd) == 0 else { return .failure(.ioFailure(path: partial, reason: "the disk did not confirm the write (fsync failed)")) }
            do throws(NearbyError) { return .success(try SafePath.placeWithoutOverwriting(partial, in: directory, as: name)) } catch {
                return .failure(error)
            }
        }
        switch placing {
        case let .success(path)?:
            writer.close()
            end(deleted: false)
            return (path, digest)
        case let .failure(error)?: throw await dropped(error)
        case nil: throw await dropped(.cancelled("the node is stopping"))
        }
    }

    /// Given up: the descriptor closed once every queued write is done, the partial file removed.
    package func abandon() async {
        writer.close()
        _ = await writer.finish()
        let partial = partial
        // On the pool; only should the pool be gone (the process ending) here.
        if (try? await Blocking.run({ _ in unlink(partial) })) == nil { unlink(partial) }
        end(deleted: true)
    }

    private func dropped(_ error: NearbyError) async -> NearbyError {
        await abandon()
        return error
    }

    /// The partial is no longer one: out of the quota and the claims (once).
    private func end(deleted: Bool) {
        guard state.withLock({ state in
            defer { state.ended = true }
            return !state.ended
        }) else { return }
        partials.gone(partial, deleted: deleted)
        partials.release(partial)
    }
}
