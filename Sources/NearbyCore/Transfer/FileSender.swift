import Crypto
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file going out on one channel: the sending end, a type of its own. The link's channel table
/// owns the channel (`OutgoingChannel`: the receiver's answers and credit reach it there); the
/// steps are checked by `FileSendMachine`.
enum FileSender {
    /// Sends `file` on `channel` (a channel of `link`, in its table): offer, resume check, data
    /// within the receiver's window, close and the receiver's confirmation. Outside the node actor:
    /// reading, hashing and waiting for credit never hold it up.
    static func send(
        _ file: OutgoingFile, over channel: OutgoingChannel, link: Link, sender: PeerID, sink: any EventSink,
        batch: Events.Progress.Batch? = nil
    ) async throws(NearbyError) {
        let transfer = String(Transfer.key(sender: sender, file: file).prefix(12)) + "-\(channel.id)"
        let peer = link.peer.ref
        func failed(_ code: String, _ reason: String) -> NearbyError {
            // The receiver keeps what arrived only when the transfer was cut (cancel, lost link);
            // a refusal, a full disk or damaged data leave nothing to resume.
            let resumable = TransferCode(code).resumable
            sink.emit(Events.FileFailed(transfer: transfer, direction: "send", peer: peer, path: file.relative, code: code, reason: reason, resumable: resumable))
            return .transferFailed(path: file.relative, code: code, reason: reason)
        }
        /// Cancelled (Ctrl-C): tell the receiver from a task that is not cancelled itself.
        func cancelled() async -> NearbyError {
            await Task { await link.send(Control.frame(.reset, Control.Reset(reason: "the sender cancelled", code: .cancelled), channel: channel.id)) }.value
            _ = failed("cancelled", "cancelled by the sender")
            return .cancelled("sending \(file.relative)")
        }
        let fd = open(file.source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failed("io-error", "cannot open \(file.source): \(Transfer.errorText(errno))") }
        let reader = FileReader(descriptor: fd)
        defer { reader.close() }

        var signals = channel.signals.makeAsyncIterator()
        await link.send(Control.frame(.open, Control.Open(kind: .file, path: file.relative, size: file.size, key: Transfer.key(sender: sender, file: file)), channel: channel.id))
        var machine = FileSendMachine(size: file.size)
        /// A step out of turn is a bug or a peer breaking the protocol: the file is not sent.
        func step(_ body: (inout FileSendMachine) throws -> Void) throws(NearbyError) {
            do {
                try body(&machine)
            } catch {
                throw failed("protocol", "the transfer broke the file protocol: \(error)")
            }
        }
        guard case let .reply(reply)? = await signals.next() else { throw failed("connection-failed", "the session ended before the peer answered") }
        var accepted: UInt64?
        try step { accepted = try $0.replied(accept: reply.accept, offset: reply.offset) }
        guard var offset = accepted else { throw failed(reply.code?.description ?? "refused", "the peer refused the file: \(reply.reason ?? "no reason")") }

        // Resume: the receiver has `offset` bytes; continue only if they are ours.
        var hasher = SHA256()
        if offset > 0 {
            NearbyLog.logger.debug("\(file.relative): the receiver has \(offset) bytes; checking they are ours")
            var prefix = SHA256()
            if Transfer.hash(fd, count: offset, into: &prefix), Transfer.hex(prefix.finalize()) == reply.prefixSHA256 {
                hasher = prefix
            } else {
                offset = 0
            }
        }
        try step { try $0.start(at: offset) }
        await link.send(Control.frame(.start, Control.Start(offset: offset), channel: channel.id))
        sink.emit(Events.FileStarted(transfer: transfer, direction: "send", peer: peer, path: file.relative, bytes: file.size, skipped: offset))

        let clock = ContinuousClock()
        let started = clock.now
        var lastProgress = started
        var position = offset
        reader.start(at: offset, end: file.size, hasher: hasher)
        // What was read and not sent yet (the peer granted less than a chunk).
        var unsent: ByteBuffer?
        while position < file.size {
            if Task.isCancelled { throw await cancelled() }
            guard let want = await channel.credit.take(upTo: Int(min(UInt64(Transfer.chunk), file.size - position))) else {
                // No more credit: the receiver reset the channel, the link went, or we were cancelled.
                if Task.isCancelled { throw await cancelled() }
                switch await signals.next() {
                case let .reset(reset)?: throw failed(reset.code.description, "the receiver stopped: \(reset.reason)")
                case let .lost(reason)?: throw failed("connection-lost", reason)
                default: throw failed("connection-lost", "the session ended")
                }
            }
            var chunk: ByteBuffer
            do {
                if let rest = unsent {
                    chunk = rest
                } else {
                    guard let next = try await reader.next() else { throw FileReader.Failure.shorter }
                    chunk = next
                }
            } catch FileReader.Failure.io(let code) {
                throw failed("io-error", "cannot read \(file.source): \(Transfer.errorText(code))")
            } catch {
                if Task.isCancelled { throw await cancelled() }
                throw failed("io-error", "\(file.source) became shorter while sending")
            }
            let count = min(want, chunk.readableBytes)
            guard let piece = chunk.readSlice(length: count) else { break }
            unsent = chunk.readableBytes > 0 ? chunk : nil
            if count < want { channel.credit.giveBack(want - count) }
            try step { try $0.sent(count) }
            await link.send(Frame(kind: .data, channel: channel.id, payload: piece))
            position += UInt64(count)
            if clock.now - lastProgress >= Transfer.progressInterval || position == file.size {
                lastProgress = clock.now
                sink.emit(Events.Progress(
                    transfer: transfer, direction: "send", peer: peer, path: file.relative, bytes: position, total: file.size,
                    rate: Transfer.rate(position - offset, Transfer.seconds(since: started)), batch: batch, done: position))
            }
        }
        let sha = Transfer.hex(await reader.hash().finalize())
        try step { try $0.finished(sha256: sha) }
        await link.send(Control.frame(.close, Control.Close(sha256: sha, bytes: file.size), channel: channel.id))
        while true {
            switch await signals.next() {
            case let .closed(confirmed)?:
                var delivered = false
                try step { delivered = try $0.confirmed(sha256: confirmed.sha256) }
                guard delivered else { throw failed("integrity", "the receiver's SHA-256 differs") }
                var sent = Events.FileSent(
                    transfer: transfer, peer: peer, path: file.relative, bytes: file.size, skipped: offset, sha256: sha,
                    seconds: Transfer.seconds(since: started), alreadyThere: confirmed.alreadyThere == true ? true : nil)
                // Two files of one name (dA/x.txt, dB/x.txt) told apart: where each came from, and
                // the name the receiver gave the one it could not save under its own.
                sent.source = file.source
                sent.savedAs = confirmed.savedName(offered: file.relative)
                sink.emit(sent)
                return
            case let .reset(reset)?: throw failed(reset.code.description, "the receiver refused the file: \(reset.reason)")
            case let .lost(reason)?: throw failed("connection-lost", reason)
            default: throw failed("connection-lost", "the session ended before the receiver confirmed")
            }
        }
    }
}
