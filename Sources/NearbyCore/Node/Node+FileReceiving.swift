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
    nonisolated func fileOffered(_ frame: Frame, on link: Link) async {
        guard let offer = try? Control.decode(Control.Open.self, from: frame) else {
            violated(link, "a malformed open on channel \(frame.channel)")
            return
        }
        guard offer.kind == .file || offer.kind == .directory else {
            await refuse(frame.channel, on: link, reason: "this node takes no \(offer.kind) channels")
            return
        }
        let parts = SafePath.components(of: offer.path)
        let relative = parts.joined(separator: "/")
        guard let saveDirectory = configuration.saveDirectory else {
            await refuseUnconsented(offer, relative: relative, on: link, channel: frame.channel)
            return
        }
        if offer.kind == .directory { return await directoryOffered(parts, in: saveDirectory, channel: frame.channel, on: link) }
        let directory = ([saveDirectory] + parts.dropLast()).joined(separator: "/")
        let name = parts.last ?? "unnamed"
        let fileKey = String(offer.key.filter { $0.isHexDigit }.prefix(32))
        var partial = "\(directory)/.\(name).\(fileKey.isEmpty ? "x" : fileKey).nearby-part"
        // The same file arriving twice at once: the second gets a partial file of its own (and
        // starts from zero) rather than sharing the one being written.
        var resume: IncomingFile.Resume?
        if partials.claim(partial) {
            resume = Self.resumable(partial, upTo: offer.size)
        } else {
            partial = "\(directory)/.\(name).\(fileKey.isEmpty ? "x" : fileKey)-\(frame.channel)-\(UInt32.random(in: 0...UInt32.max)).nearby-part"
            _ = partials.claim(partial)
        }
        let file = IncomingFile(
            transfer: String(fileKey.prefix(12)) + "-\(frame.channel)", channel: frame.channel, peer: link.peer.ref,
            relative: relative, directory: directory, name: name, partial: partial, size: offer.size, resume: resume)
        guard link.channels.accept(frame.channel, .receiving(file)) else { return partials.release(partial) }
        await link.send(Control.frame(.openReply, Control.OpenReply(
            accept: true, offset: resume?.bytes ?? 0, prefixSHA256: resume.map { Transfer.hex($0.hasher.finalize()) }, reason: nil),
            channel: frame.channel))
    }

    /// What an interrupted transfer of the same file left, offered for resuming.
    private nonisolated static func resumable(_ partial: String, upTo size: UInt64) -> IncomingFile.Resume? {
        let existing = open(partial, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard existing >= 0 else { return nil }
        defer { close(existing) }
        var stats = stat()
        let bytes = fstat(existing, &stats) == 0 ? UInt64(max(0, stats.st_size)) : 0
        var prefix = SHA256()
        guard bytes > 0, bytes <= size, Transfer.hash(existing, count: bytes, into: &prefix) else { return nil }
        return IncomingFile.Resume(bytes: bytes, hasher: prefix)
    }

    /// Refuses an offer: nothing was made for it.
    nonisolated func refuse(_ channel: UInt32, on link: Link, reason: String) async {
        link.channels.finish(channel)
        await link.send(Control.frame(.openReply, Control.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason), channel: channel))
    }

    nonisolated func fileStarts(_ frame: Frame, _ file: IncomingFile, on link: Link) async {
        let resumed = (try? Control.decode(Control.Start.self, from: frame)).flatMap { start in
            try? file.progress.withLock { (progress: inout IncomingFile.Progress) throws(FileReceiveMachine.Illegal) -> Bool in
                try progress.machine.start(at: start.offset)
            }
        }
        guard let resumed else {
            violated(link, "a start that does not match the offer on channel \(frame.channel)")
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: file.directory, withIntermediateDirectories: true)
        } catch {
            await fail(file, on: link, code: "io-error", reason: "cannot create \(file.directory): \(error.localizedDescription)")
            return
        }
        let descriptor = open(file.partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            await fail(file, on: link, code: "io-error", reason: "cannot write in \(file.directory): \(Transfer.errorText(errno))")
            return
        }
        var hasher = SHA256()
        if resumed, let resume = file.resume {
            hasher = resume.hasher
        } else {
            _ = ftruncate(descriptor, 0)
        }
        let writer = FileWriter(descriptor: descriptor, hasher: hasher)
        let skipped = file.progress.withLock { progress in
            progress.writer = writer
            progress.started = .now
            progress.lastProgress = .now
            return progress.machine.skipped
        }
        events.emit(Events.FileStarted(transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: file.size, skipped: skipped))
    }

    nonisolated func fileData(_ frame: Frame, _ file: IncomingFile, on link: Link) async {
        let count = frame.payload.readableBytes
        let step = file.progress.withLock { progress -> Result<(FileWriter, UInt64), FileReceiveMachine.Illegal> in
            do throws(FileReceiveMachine.Illegal) {
                let at = try progress.machine.data(count)
                guard let writer = progress.writer else { return .failure(.dataBeforeStart) }
                return .success((writer, at))
            } catch {
                return .failure(error)
            }
        }
        let writer: FileWriter, at: UInt64
        switch step {
        case let .success(next): (writer, at) = next
        case .failure(.pastEnd):
            return await fail(file, on: link, code: "protocol", reason: "the sender sent more than the \(file.size) bytes it announced")
        case let .failure(illegal):
            return violated(link, "\(illegal) on channel \(frame.channel)")
        }
        let failure = await writer.write(frame.payload, at: at)
        if failure != 0 { return await failed(file, on: link, writing: failure) }
        await link.consumed(count, on: frame.channel)
        let due = file.progress.withLock { progress -> (UInt64, UInt64, ContinuousClock.Instant)? in
            guard ContinuousClock.now - progress.lastProgress >= Transfer.progressInterval else { return nil }
            progress.lastProgress = .now
            return (progress.machine.position, progress.machine.skipped, progress.started)
        }
        if let (position, skipped, started) = due {
            events.emit(Events.Progress(
                transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: position,
                total: file.size, rate: Transfer.rate(position - skipped, Transfer.seconds(since: started))))
        }
    }

    nonisolated func fileEnds(_ frame: Frame, _ file: IncomingFile, on link: Link) async {
        guard let end = try? Control.decode(Control.Close.self, from: frame) else { return }
        guard let writer = file.progress.withLock({ $0.writer }) else {
            return await fail(file, on: link, code: "integrity", reason: "the file ended before it started")
        }
        let (hasher, failure) = await writer.finish()
        if failure != 0 { return await failed(file, on: link, writing: failure) }
        let sha = Transfer.hex(hasher.finalize())
        let complete = file.progress.withLock { progress in
            (try? progress.machine.closable(announced: end.bytes)) != nil
        }
        guard complete, end.sha256 == sha else {
            return await fail(file, on: link, code: "integrity", reason: "the file arrived damaged (SHA-256 \(sha) ≠ \(end.sha256.prefix(64)))")
        }
        // Every write is done: the descriptor is ours again. Private while incomplete; the usual
        // mode (0666 less the umask) once it is a real file.
        _ = fchmod(writer.descriptor, Transfer.finishedMode)
        let synced = fsync(writer.descriptor) == 0
        close(writer.descriptor)
        let (skipped, started) = file.progress.withLock { progress in
            progress.writer = nil
            return (progress.machine.skipped, progress.started)
        }
        var placed: String
        // The same file sent again, its complete copy already there: no second copy.
        let existing = await AlreadyThere.copy(of: sha, size: file.size, in: file.directory, as: file.name)
        do {
            guard synced else { throw NearbyError.ioFailure(path: file.partial, reason: "fsync failed") }
            if let existing {
                unlink(file.partial)
                placed = existing
            } else {
                placed = try SafePath.placeWithoutOverwriting(file.partial, in: file.directory, as: file.name)
            }
        } catch {
            return await fail(file, on: link, code: "io-error", reason: (error as? NearbyError)?.errorDescription ?? "cannot place the file")
        }
        file.progress.withLock { progress in _ = try? progress.machine.close(announced: end.bytes) }
        link.channels.finish(file.channel)
        partials.release(file.partial)
        let seconds = Transfer.seconds(since: started)
        if file.size > 0 {
            events.emit(Events.Progress(
                transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, bytes: file.size,
                total: file.size, rate: Transfer.rate(file.size - skipped, seconds)))
        }
        events.emit(Events.FileReceived(
            transfer: file.transfer, peer: file.peer, path: placed, bytes: file.size, skipped: skipped, sha256: sha, seconds: seconds,
            alreadyThere: existing != nil ? true : nil))
        let savedAs = placed.split(separator: "/").last.map(String.init)
        await link.send(Control.frame(
            .close, Control.Close(sha256: sha, bytes: file.size, alreadyThere: existing != nil ? true : nil, savedAs: savedAs == file.name ? nil : savedAs),
            channel: frame.channel))
    }

    /// The sender stopped (a `reset`, which already ended the channel): what arrived stays for a resume.
    nonisolated func fileReset(_ frame: Frame, _ file: IncomingFile) {
        let reset = (try? Control.decode(Control.Reset.self, from: frame)) ?? Control.Reset(reason: "reset", code: .cancelled)
        abandon(file, code: reset.code.description, reason: "the sender stopped: \(String(reset.reason.prefix(Control.maxReasonBytes)))", keepPartial: true)
    }

    /// A write failed (the disk is full, an I/O error).
    private nonisolated func failed(_ file: IncomingFile, on link: Link, writing failure: Int32) async {
        let reason = failure == ENOSPC ? "the disk is full" : Transfer.errorText(failure)
        await fail(file, on: link, code: "io-error", reason: "cannot write \(file.relative): \(reason)")
    }

    /// The receiver gives up on a file (damaged, too long, disk full): nothing is kept, the sender
    /// hears why.
    private nonisolated func fail(_ file: IncomingFile, on link: Link, code: String, reason: String) async {
        link.channels.finish(file.channel)
        abandon(file, code: code, reason: reason, keepPartial: false)
        await link.send(Control.frame(.reset, Control.Reset(reason: reason, code: TransferCode(code)), channel: file.channel))
    }

    /// Gives up on an incoming file: nothing under its final name; the partial file kept for a resume
    /// when the interruption was not the data's fault and something arrived. Once: a file that has
    /// ended already is left alone.
    nonisolated func abandon(_ file: IncomingFile, code: String, reason: String, keepPartial: Bool) {
        let ended = file.progress.withLock { progress -> (writer: FileWriter?, position: UInt64)? in
            let position = progress.machine.position
            guard progress.machine.reset() else { return nil }
            defer { progress.writer = nil }
            return (progress.writer, position)
        }
        guard let (writer, position) = ended else { return }
        writer?.close()
        if writer != nil, !keepPartial || position == 0 { unlink(file.partial) }
        partials.release(file.partial)
        events.emit(Events.FileFailed(
            transfer: file.transfer, direction: "receive", peer: file.peer, path: file.relative, code: code, reason: reason,
            resumable: keepPartial && position > 0))
    }

    /// The link is gone: everything it carried ends with it. Incoming files fail (partial files
    /// stay for a resume), senders and streams stop, streams waiting for a listener are dropped.
    func channelsLost(on link: Link) {
        let reason = link.closeReason ?? "connection lost"
        for end in link.channels.drop() {
            switch end {
            case let .receiving(file) where reason.hasPrefix("we left"):
                // Our own leaving (Ctrl-C here, `disconnect`): nothing vanished.
                abandon(file, code: "cancelled", reason: "cancelled here (\(reason))", keepPartial: true)
            case let .receiving(file):
                abandon(file, code: "connection-lost", reason: "the peer vanished mid-transfer (\(reason))", keepPartial: true)
            case let .sending(channel):
                channel.lost(reason)
            case let .stream(stream):
                stream.lost(.sessionEnded(reason))
            }
        }
        streamWaits.pending.removeAll { $0.link === link }
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
