import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Receiving files: an offer is answered from what is on disk (a partial file to resume) without
/// opening or creating anything; the partial file is made only when the sender starts, so an offer
/// that never sends a byte leaves nothing behind and holds no descriptor.
extension Node {
    func fileOffered(_ frame: Frame, on link: Link) async {
        let key = ChannelKey(link, frame.channel)
        guard transfers.incoming[key] == nil, let offer = try? Control.decode(Control.Open.self, from: frame) else {
            violated(link, "a malformed or repeated open on channel \(frame.channel)")
            return
        }
        guard offer.kind == "file" else {
            await refuse(frame.channel, on: link, reason: "this node takes no \(offer.kind.prefix(32)) channels")
            return
        }
        let parts = SafePath.components(of: offer.path)
        let relative = parts.joined(separator: "/")
        guard let saveDirectory = configuration.saveDirectory else {
            await refuseUnconsented(offer, relative: relative, on: link, channel: frame.channel)
            return
        }
        let directory = ([saveDirectory] + parts.dropLast()).joined(separator: "/")
        let name = parts.last ?? "unnamed"
        let fileKey = String(offer.key.filter { $0.isHexDigit }.prefix(32))
        var partial = "\(directory)/.\(name).\(fileKey.isEmpty ? "x" : fileKey).nearby-part"
        // The same file arriving twice at once: the second gets a partial file of its own (and
        // starts from zero) rather than sharing the one being written.
        if transfers.incoming.values.contains(where: { $0.partial == partial }) {
            partial = "\(directory)/.\(name).\(fileKey.isEmpty ? "x" : fileKey)-\(frame.channel)-\(UInt32.random(in: 0...UInt32.max)).nearby-part"
        }
        let file = IncomingFile(
            transfer: String(fileKey.prefix(12)) + "-\(frame.channel)", peer: link.peer.ref, relative: relative,
            directory: directory, name: name, partial: partial, size: offer.size)
        // What an interrupted transfer of the same file left, offered for resuming.
        let existing = open(partial, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if existing >= 0 {
            var stats = stat()
            let size = fstat(existing, &stats) == 0 ? UInt64(max(0, stats.st_size)) : 0
            var prefix = SHA256()
            if size > 0, size <= offer.size, Transfer.hash(existing, count: size, into: &prefix) {
                file.offered = size
                file.prefixHasher = prefix
            }
            close(existing)
        }
        transfers.incoming[key] = file
        muxes[link]?.accept(frame.channel)
        await link.send(Control.frame(.openReply, Control.OpenReply(
            accept: true, offset: file.offered, prefixSHA256: file.prefixHasher.map { Transfer.hex($0.finalize()) }, reason: nil),
            channel: frame.channel))
    }

    /// Refuses an offer: nothing was made for it.
    func refuse(_ channel: UInt32, on link: Link, reason: String) async {
        muxes[link]?.finish(channel)
        await link.send(Control.frame(.openReply, Control.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason), channel: channel))
    }

    func fileStarts(_ frame: Frame, on link: Link) async {
        let key = ChannelKey(link, frame.channel)
        guard let file = transfers.incoming[key],
              let start = try? Control.decode(Control.Start.self, from: frame), start.offset == 0 || start.offset == file.offered
        else {
            violated(link, "a start that does not match the offer on channel \(frame.channel)")
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: file.directory, withIntermediateDirectories: true)
        } catch {
            await fail(file, key, on: link, code: "io-error", reason: "cannot create \(file.directory): \(error.localizedDescription)")
            return
        }
        let descriptor = open(file.partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            await fail(file, key, on: link, code: "io-error", reason: "cannot write in \(file.directory): \(Transfer.errorText(errno))")
            return
        }
        var hasher = SHA256()
        if start.offset > 0, let prefix = file.prefixHasher {
            hasher = prefix
        } else {
            _ = ftruncate(descriptor, 0)
        }
        file.writer = FileWriter(descriptor: descriptor, hasher: hasher)
        file.position = start.offset
        file.skipped = start.offset
        file.started = .now
        events.emit(Events.FileStarted(transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: file.size, skipped: file.skipped))
    }

    func fileData(_ frame: Frame, on link: Link) async {
        let key = ChannelKey(link, frame.channel)
        guard let file = transfers.incoming[key] else { return }
        guard let writer = file.writer else {
            violated(link, "data before start on channel \(frame.channel)")
            return
        }
        let count = frame.payload.readableBytes
        guard file.position + UInt64(count) <= file.size else {
            await fail(file, key, on: link, code: "protocol", reason: "the sender sent more than the \(file.size) bytes it announced")
            return
        }
        let failure = await writer.write(frame.payload, at: file.position)
        if failure != 0 {
            await failed(file, key, on: link, writing: failure)
            return
        }
        file.position += UInt64(count)
        await consumed(count, on: frame.channel, of: link)
        if ContinuousClock.now - file.lastProgress >= Transfer.progressInterval {
            file.lastProgress = .now
            events.emit(Events.Progress(
                transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: file.position,
                total: file.size, rate: Transfer.rate(file.position - file.skipped, Transfer.seconds(since: file.started))))
        }
    }

    func fileEnds(_ frame: Frame, on link: Link) async {
        let key = ChannelKey(link, frame.channel)
        guard let file = transfers.incoming[key], let end = try? Control.decode(Control.Close.self, from: frame) else { return }
        guard let writer = file.writer else {
            await fail(file, key, on: link, code: "integrity", reason: "the file ended before it started")
            return
        }
        let (hasher, failure) = await writer.finish()
        if failure != 0 {
            await failed(file, key, on: link, writing: failure)
            return
        }
        let sha = Transfer.hex(hasher.finalize())
        guard file.position == file.size, end.bytes == file.size, end.sha256 == sha else {
            await fail(file, key, on: link, code: "integrity", reason: "the file arrived damaged (SHA-256 \(sha) ≠ \(end.sha256.prefix(64)))")
            return
        }
        // Every write is done: the descriptor is ours again. Private while incomplete; the usual
        // mode (0666 less the umask) once it is a real file.
        _ = fchmod(writer.descriptor, Transfer.finishedMode)
        let synced = fsync(writer.descriptor) == 0
        close(writer.descriptor)
        file.writer = nil
        let placed: String
        do {
            guard synced else { throw NearbyError.ioFailure(path: file.partial, reason: "fsync failed") }
            placed = try SafePath.placeWithoutOverwriting(file.partial, in: file.directory, as: file.name)
        } catch {
            await fail(file, key, on: link, code: "io-error", reason: (error as? NearbyError)?.errorDescription ?? "cannot place the file")
            return
        }
        transfers.incoming[key] = nil
        let seconds = Transfer.seconds(since: file.started)
        if file.size > 0 {
            events.emit(Events.Progress(
                transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: file.size,
                total: file.size, rate: Transfer.rate(file.size - file.skipped, seconds)))
        }
        events.emit(Events.FileReceived(transfer: file.transfer, peer: file.peer, path: placed, bytes: file.size, skipped: file.skipped, sha256: sha, seconds: seconds))
        await link.send(Control.frame(.close, Control.Close(sha256: sha, bytes: file.size), channel: frame.channel))
        muxes[link]?.finish(frame.channel)
    }

    /// The sender stopped (a `reset`): what arrived stays for a resume.
    func fileReset(_ frame: Frame, on link: Link) {
        guard let file = transfers.incoming.removeValue(forKey: ChannelKey(link, frame.channel)) else { return }
        let reset = (try? Control.decode(Control.Reset.self, from: frame)) ?? Control.Reset(reason: "reset", code: "cancelled")
        abandon(file, code: reset.code, reason: "the sender stopped: \(String(reset.reason.prefix(Control.maxReasonBytes)))", keepPartial: true)
    }

    /// A write failed (the disk is full, an I/O error).
    private func failed(_ file: IncomingFile, _ key: ChannelKey, on link: Link, writing failure: Int32) async {
        let reason = failure == ENOSPC ? "the disk is full" : Transfer.errorText(failure)
        await fail(file, key, on: link, code: "io-error", reason: "cannot write \(file.relative): \(reason)")
    }

    /// The receiver gives up on a file (damaged, too long, disk full): nothing is kept, the sender
    /// hears why.
    private func fail(_ file: IncomingFile, _ key: ChannelKey, on link: Link, code: String, reason: String) async {
        transfers.incoming[key] = nil
        abandon(file, code: code, reason: reason, keepPartial: false)
        await link.send(Control.frame(.reset, Control.Reset(reason: reason, code: code), channel: key.channel))
        muxes[link]?.finish(key.channel)
    }

    /// Gives up on an incoming file: nothing under its final name; the partial file kept for a resume
    /// when the interruption was not the data's fault and something arrived.
    func abandon(_ file: IncomingFile, code: String, reason: String, keepPartial: Bool) {
        let started = file.writer != nil
        file.writer?.close()
        file.writer = nil
        if started, !keepPartial || file.position == 0 { unlink(file.partial) }
        events.emit(Events.FileFailed(
            transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, code: code, reason: reason,
            resumable: keepPartial && file.position > 0))
    }

    /// The link is gone: every transfer on it failed; partial files stay for a resume.
    func transfersLost(on link: Link) {
        let id = ObjectIdentifier(link)
        let reason = link.closeReason ?? "connection lost"
        for (key, file) in transfers.incoming where key.link == id {
            transfers.incoming[key] = nil
            abandon(file, code: "connection-lost", reason: "the peer vanished mid-transfer (\(reason))", keepPartial: true)
        }
        for (key, channel) in transfers.outgoing where key.link == id {
            channel.continuation.yield(.lost(reason))
            channel.credit.close()
        }
        for (key, stream) in streamParts.active where key.link == id {
            streamParts.active[key] = nil
            stream.lost(.sessionEnded(reason))
        }
        streamParts.pending.removeAll { $0.link === link }
    }
}

extension Transfer {
    /// `pwrite(2)` until everything is written, retrying on EINTR. Returns 0, or the errno that stopped it.
    static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) -> Int32 {
        var written = 0
        while written < bytes.count {
            let n = pwrite(fd, bytes.baseAddress.map { $0 + written }, bytes.count - written, off_t(offset) + off_t(written))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += n
        }
        return 0
    }

    /// `close(2)`, for types whose own `close()` hides it.
    static func closeDescriptor(_ fd: Int32) { _ = close(fd) }
}
