import Crypto
import NIOCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes and hashes an incoming file at most `ahead` bytes behind the node, memory bounded: the
/// event loop decrypts the next frames while the last ones go to disk, and those before them through
/// SHA-256. Writing and hashing are two serial queues in a row (`Blocking.Serial`), so the two run
/// at once on two cores instead of one after the other (together they were the receiver's longest
/// chain: 3.6 s of a 4.6 s GiB). A failed write is reported by the next `write` and by `finish`; the descriptor is
/// only ever closed on the writing queue, after every write queued before. Public for the other
/// protocols' receivers (LocalSend, the web server): one receive-to-disk path, off the cooperative pool.
/// A small file (`inline`: at most `inlineBytes`) skips the queues: a write of a few KiB to the page
/// cache costs less than the two hops and wake-ups that would carry it, so it is written and hashed
/// at once, on the caller's thread.
package final class FileWriter: Sendable {
    private struct State {
        var failure: Int32 = 0
        /// `close()` was called: nothing more is queued.
        var closing = false
        /// The descriptor is closed (set on the queue): a write queued after that is dropped, never
        /// sent to a descriptor number the process may have reused.
        var closed = false
    }

    /// Bytes queued and not yet written may not exceed this.
    static let ahead = 8 << 20
    /// Files of at most this size are written inline.
    static let inlineBytes: UInt64 = 256 << 10
    /// Written and hashed on the caller's thread (a small file), not on the queues.
    let inline: Bool
    package let descriptor: Int32
    /// The descriptor's place in the `ResourceBudget`: given back once it is closed.
    package let charge: ResourceBudget.Charge?
    private let queue = Blocking.Serial()
    /// Hashes what `queue` wrote, in the order written.
    private let hashQueue = Blocking.Serial()
    private let room = SendCredit(initial: FileWriter.ahead)
    private let state = Locked(State())
    /// Touched only on `hashQueue`.
    private final class Hashing: @unchecked Sendable {
        var hasher: SHA256
        init(_ hasher: SHA256) { self.hasher = hasher }
    }
    private let hashing: Hashing

    package init(descriptor: Int32, hasher: SHA256 = SHA256(), charge: ResourceBudget.Charge? = nil, inline: Bool = false) {
        self.descriptor = descriptor
        self.charge = charge
        self.inline = inline
        hashing = Hashing(hasher)
    }

    /// The errno of a write that failed so far, 0 if none.
    package var failure: Int32 { state.withLock { $0.failure } }

    /// Queues `payload` for `offset`; waits only while `ahead` bytes are queued. Returns the errno of
    /// an earlier failed write (nothing is queued then), or `ECANCELED` when the task was cancelled.
    package func write(_ payload: ByteBuffer, at offset: UInt64) async -> Int32 {
        if inline { return writeInline(payload, at: offset) }
        guard await room.take(exactly: payload.readableBytes) else { return ECANCELED }
        let earlier = state.withLock { $0.closing ? EBADF : $0.failure }
        if earlier != 0 {
            room.add(payload.readableBytes)
            return earlier
        }
        queue.async { [self] in
            let written = payload.withUnsafeReadableBytes { bytes in
                guard state.withLock({ $0.failure == 0 && !$0.closed }) else { return false }
                let error = Transfer.pwriteAll(descriptor, bytes, at: offset)
                if error != 0 { state.withLock { $0.failure = error } }
                return error == 0
            }
            guard written else {
                room.add(payload.readableBytes)
                return
            }
            hashQueue.async { [self] in
                payload.withUnsafeReadableBytes { hashing.hasher.update(bufferPointer: $0) }
                room.add(payload.readableBytes)
                BufferPool.received.recycle(payload)
            }
        }
        return 0
    }

    /// Writes and hashes `payload` at once (`inline`). The frames of one channel come one after
    /// another from the link's task, so nothing else touches the hasher meanwhile; the write holds
    /// the lock `close` takes, so it never reaches a descriptor number closed (and reused) meanwhile.
    private func writeInline(_ payload: ByteBuffer, at offset: UInt64) -> Int32 {
        let error = state.withLock { state -> Int32 in
            guard !state.closing, state.failure == 0 else { return state.closing ? EBADF : state.failure }
            state.failure = payload.withUnsafeReadableBytes { Transfer.pwriteAll(descriptor, $0, at: offset) }
            return state.failure
        }
        guard error == 0 else { return error }
        payload.withUnsafeReadableBytes { hashing.hasher.update(bufferPointer: $0) }
        BufferPool.received.recycle(payload)
        return 0
    }

    /// Waits for every queued write and its hashing; the hash of everything written, and the errno of a failed write.
    package func finish() async -> (hasher: SHA256, failure: Int32) {
        if inline { return (hashing.hasher, state.withLock { $0.failure }) }
        let hashed = OneShot<Transfer.HashState>()
        queue.async { [hashing, hashQueue] in
            hashQueue.async { hashed.settle(Transfer.HashState(hasher: hashing.hasher)) }
        }
        // Settled by the queue, never abandoned: the fallback is never taken.
        let hasher = await hashed.waitThroughCancellation()?.hasher ?? SHA256()
        return (hasher, state.withLock { $0.failure })
    }

    /// Taken back (the strangers' quota deleted the partial): writes still queued are dropped and the
    /// descriptor closed at once, so the unlinked file's blocks are free now, not at the sender's next
    /// write. Later writes and `finish` report `ECANCELED`.
    package func stop() {
        state.withLock { state in
            if state.failure == 0 { state.failure = ECANCELED }
        }
        close()
    }

    /// Closes the descriptor once every queued write is done (now, if there are none).
    package func close() {
        let first = state.withLock { state in
            defer { state.closing = true }
            guard !state.closing else { return false }
            if inline {
                Transfer.closeDescriptor(descriptor)
                state.closed = true
            }
            return true
        }
        guard first else { return }
        if inline {
            charge?.release()
            return
        }
        queue.async { [self] in
            Transfer.closeDescriptor(descriptor)
            state.withLock { $0.closed = true }
            charge?.release()
        }
    }
}
