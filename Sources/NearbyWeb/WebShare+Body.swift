import NIOCore
import NearbyBase
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension WebShare {
    /// A descriptor charged to the budget for `file`, the file listed (`ListedFile`), or why not;
    /// `release` closes it and gives the charge back.
    func openListed(_ file: OutgoingFile) async -> Result<Int32, ListedFile.Refusal> {
        guard budget.takeDescriptors(1) else { return .failure(.unreadable("this device has no descriptor to spare")) }
        let opened = await ListedFile.open(file)
        if case .failure = opened { budget.giveDescriptors(1) }
        return opened
    }

    func release(_ fd: Int32) {
        close(fd)
        budget.giveDescriptors(1)
    }

    /// Bytes `lower..<upper` of the open file `fd`, read off the event loops a block at a time, each
    /// block read only once the one before left the node (`WebReply.chunk`): a browser that stops
    /// reading holds one block.
    func sendFile(_ fd: Int32, path: String, from lower: UInt64, to upper: UInt64, reply: WebReply, sent: (UInt64) -> Void) async throws {
        var offset = lower
        while offset < upper {
            let count = Int(min(UInt64(Self.block), upper - offset))
            let buffer = try await Self.read(fd, count: count, at: offset, path: path)
            try await reply.chunk(buffer)
            offset += UInt64(count)
            sent(UInt64(count))
        }
    }

    /// The directory as a stored zip of `entries` (its files still listed when the download began):
    /// each entry's header, its bytes (their CRC-32 taken on the way), its data descriptor; then the
    /// central directory. An entry swapped since the check cuts the download (its length was announced).
    func sendZip(_ files: [OutgoingFile], _ layout: ZipLayout, reply: WebReply, sent: (UInt64) -> Void) async throws {
        var crcs: [UInt32] = []
        for (index, file) in files.enumerated() {
            let header = layout.localHeader(index)
            try await reply.chunk(ByteBuffer(bytes: header))
            sent(UInt64(header.count))
            var crc: UInt32 = 0
            if file.directory != true {
                let fd: Int32
                switch await openListed(file) {
                case let .success(opened): fd = opened
                case let .failure(refusal):
                    skip(file.relative, refusal)
                    throw NearbyError.transferFailed(path: file.relative, code: .skipped, reason: refusal.words)
                }
                defer { release(fd) }
                var offset: UInt64 = 0
                while offset < file.size {
                    let count = Int(min(UInt64(Self.block), file.size - offset))
                    let buffer = try await Self.read(fd, count: count, at: offset, path: file.source)
                    crc = buffer.withUnsafeReadableBytes { ZipLayout.crc32(crc, $0) }
                    try await reply.chunk(buffer)
                    offset += UInt64(count)
                    sent(UInt64(count))
                }
            }
            crcs.append(crc)
            let descriptor = layout.descriptor(index, crc: crc)
            try await reply.chunk(ByteBuffer(bytes: descriptor))
            sent(UInt64(descriptor.count))
        }
        let central = layout.centralDirectory(crcs: crcs)
        try await reply.chunk(ByteBuffer(bytes: central))
        sent(UInt64(central.count))
    }

    /// The entries of a directory item still as listed, and their zip: those swapped since are left
    /// out (each said once in a `skipped` event). Nil when nothing of it is left.
    func zipAsListed(_ files: [OutgoingFile], _ layout: ZipLayout) -> ([OutgoingFile], ZipLayout)? {
        var kept: [OutgoingFile] = []
        var entries: [ZipLayout.Entry] = []
        for (index, file) in files.enumerated() {
            if file.directory != true, let refusal = ListedFile.stillListed(file) {
                skip(file.relative, refusal)
                continue
            }
            kept.append(file)
            entries.append(layout.entries[index])
        }
        if kept.count == files.count { return (files, layout) }
        guard kept.contains(where: { $0.directory != true }), let smaller = ZipLayout(entries) else { return nil }
        return (kept, smaller)
    }

    /// A `skipped` event for `path` (once for each path while the share runs).
    func skip(_ path: String, _ refusal: ListedFile.Refusal) {
        guard skippedPaths.withLock({ $0.insert(path).inserted }) else { return }
        events.emit(Events.Skipped(path: path, reason: refusal.words + ": not served"))
    }

    /// Exactly `count` bytes at `offset` (a file that shrank while it is served fails the download),
    /// read on the core's `Blocking` pool.
    static func read(_ fd: Int32, count: Int, at offset: UInt64, path: String) async throws -> ByteBuffer {
        try await Blocking.run { _ in
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer -> Int in
                guard let base = pointer.baseAddress else { return 0 }
                var done = 0
                while done < count {
                    let n = pread(fd, base + done, count - done, off_t(offset) + off_t(done))
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { break }
                    done += n
                }
                return done
            }
            guard got == count else { throw NearbyError.ioFailure(path: path, reason: "it changed while it was being served") }
            return buffer
        }
    }
}

/// `progress` events for one download, at most ~10 a second.
final class Meter: @unchecked Sendable {
    // Used by the one task that serves the download.
    let events: any EventSink
    let transfer: String
    let peer: PeerRef
    let path: String
    let total: UInt64
    var bytes: UInt64 = 0
    let started = ContinuousClock.now
    var pacer = ProgressPacer(since: .now)

    init(events: any EventSink, transfer: String, peer: PeerRef, path: String, total: UInt64) {
        self.events = events
        self.transfer = transfer
        self.peer = peer
        self.path = path
        self.total = total
    }

    func add(_ count: UInt64) {
        bytes += count
        guard pacer.due(final: bytes == total) else { return }
        events.emit(Events.Progress(
            transfer: transfer, direction: "send", peer: peer, path: path, bytes: bytes, total: total,
            rate: Transfer.rate(bytes, Transfer.seconds(since: started))))
    }
}
