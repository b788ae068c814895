import Crypto
import NIOCore
import NearbyBase
import NearbyIdentity
import NearbyWire
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
    /// reading, hashing and waiting for credit never hold it up. With `permits` (a folder's files),
    /// the data waits for a place among the files sending at once, held until the file ends.
    ///
    /// `opening` makes the file's channel and writes our offer on it in one step (`Link.openSending`):
    /// the peer takes channel numbers only in increasing order, so many files offered at once must
    /// leave in the order their channels were numbered. It is called once the file could be opened.
    static func send(
        _ file: OutgoingFile, opening: (FrameBody.Open) throws(NearbyError) -> OutgoingChannel, link: any ChannelPort,
        sender: PeerID, sink: any EventSink, batch: Events.Progress.Batch? = nil, permits: StartPermits? = nil
    ) async throws(NearbyError) {
        let key = Transfer.key(sender: sender, file: file)
        var transfer = String(key.prefix(12))
        let peer = link.peer.ref
        func failed(_ code: TransferCode, _ reason: String) -> NearbyError {
            // The receiver keeps what arrived only when the transfer was cut (cancel, lost link);
            // a refusal, a full disk or damaged data leave nothing to resume.
            let resumable = code.resumable
            sink.emit(Events.FileFailed(transfer: transfer, direction: "send", peer: peer, path: file.relative, code: code.description, reason: reason, resumable: resumable))
            return .transferFailed(path: file.relative, code: code, reason: reason)
        }
        let fd = open(file.source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failed(.ioError, "cannot open \(file.source): \(Transfer.errorText(errno))") }
        let reader = FileReader(descriptor: fd, inline: file.size <= FileWriter.inlineBytes)
        defer { reader.close() }
        // The offer is out once the channel is made.
        let channel = try opening(FrameBody.Open(kind: .file, path: file.relative, size: file.size, key: key, modified: file.modifiedNanoseconds))
        defer { link.endChannel(channel.id) }
        transfer += "-\(channel.id)"
        /// Cancelled (Ctrl-C): tell the receiver from a task that is not cancelled itself.
        func cancelled() async -> NearbyError {
            await link.tellCancelled(on: channel.id)
            _ = failed(.cancelled, "cancelled by the sender")
            return .cancelled("sending \(file.relative)")
        }
        var placed = false
        defer { if placed { permits?.release() } }

        var signals = channel.signals.makeAsyncIterator()
        var machine = FileSendMachine(size: file.size, channel: channel.id)
        // Frames go out together when nothing waits between them: a small file's start, data and
        // close leave in one write (one flush, one TLS record run), not three. Sent before any wait.
        var outbox: [Frame] = []
        func flush() async {
            guard !outbox.isEmpty else { return }
            await link.send(contentsOf: outbox)
            outbox.removeAll(keepingCapacity: true)
        }
        /// A step of the sender's own (a piece sent) out of turn: the file is not sent.
        func step(_ body: (inout FileSendMachine) throws -> Void) throws(NearbyError) {
            do {
                try body(&machine)
            } catch {
                throw failed(.protocolBroken, "the transfer broke the file protocol: \(error)")
            }
        }
        /// Sends the machine's frames; returns what it asks for beyond them. A failure is thrown.
        func carry(_ actions: [FileSendMachine.Action]) async throws(NearbyError) -> FileSendMachine.Action? {
            var next: FileSendMachine.Action?
            for action in actions {
                switch action {
                case let .send(frame): outbox.append(frame)
                case let .fail(code, reason):
                    await flush()
                    throw failed(code, reason)
                case .checkPrefix, .compareHeld, .sendData, .delivered: next = action
                }
            }
            return next
        }
        /// What the receiver says next, as the machine takes it: waiting for its answer, or for its
        /// close after ours.
        func heard() async -> [FileSendMachine.Action] {
            await flush()
            let signal = await signals.next()
            if machine.state == .opening {
                guard case let .reply(reply)? = signal else { return [.fail(code: .connectionFailed, reason: "the session ended before the peer answered")] }
                return machine.answered(reply)
            }
            switch signal {
            case let .closed(close)?: return machine.receiverClosed(close)
            case let .reset(reset)?: return machine.receiverReset(reset)
            case let .lost(reason)?: return machine.lost(reason)
            default: return machine.lost("the session ended before the receiver confirmed")
            }
        }

        // What the data phase leaves for the `file-sent` event.
        var skipped: UInt64 = 0
        var started = ContinuousClock.now
        var sha = ""
        /// The data: from `offset`, within the receiver's window, then our close.
        func sendData(from offset: UInt64, hasher: SHA256) async throws(NearbyError) {
            skipped = offset
            sink.emit(Events.FileStarted(transfer: transfer, direction: "send", peer: peer, path: file.relative, bytes: file.size, skipped: offset))
            let clock = ContinuousClock()
            started = clock.now
            var pacer = ProgressPacer(since: started)
            var position = offset
            reader.start(at: offset, end: file.size, hasher: hasher)
            // What was read and not sent yet (the peer granted less than a chunk).
            var unsent: ByteBuffer?
            while position < file.size {
                if Task.isCancelled { throw await cancelled() }
                await flush()
                guard let want = await channel.credit.take(upTo: Int(min(UInt64(Transfer.chunk), file.size - position))) else {
                    // No more credit: the receiver reset the channel, the link went, or we were cancelled.
                    if Task.isCancelled { throw await cancelled() }
                    let stop = switch await signals.next() {
                    case let .reset(reset)?: machine.receiverReset(reset)
                    case let .lost(reason)?: machine.lost(reason)
                    default: machine.lost("the session ended")
                    }
                    guard case let .fail(code, reason)? = stop.first else { throw failed(.connectionLost, "the session ended") }
                    throw failed(code, reason)
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
                    throw failed(.ioError, "cannot read \(file.source): \(Transfer.errorText(code))")
                } catch {
                    if Task.isCancelled { throw await cancelled() }
                    throw failed(.ioError, "\(file.source) became shorter while sending")
                }
                let count = min(want, chunk.readableBytes)
                guard let piece = chunk.readSlice(length: count) else { break }
                unsent = chunk.readableBytes > 0 ? chunk : nil
                if count < want { channel.credit.giveBack(want - count) }
                try step { try $0.sent(count) }
                outbox.append(Frame(kind: .data, channel: channel.id, payload: piece))
                position += UInt64(count)
                if pacer.due(final: position == file.size, at: clock.now) {
                    sink.emit(Events.Progress(
                        transfer: transfer, direction: "send", peer: peer, path: file.relative, bytes: position, total: file.size,
                        rate: Transfer.rate(position - offset, Transfer.seconds(since: started)), batch: batch, done: position))
                }
            }
            sha = Transfer.hex(await reader.hash().finalize())
            _ = try await carry(machine.ended(sha256: sha))
        }

        var next: FileSendMachine.Action?
        var hasher = SHA256()
        while true {
            switch next {
            case nil:
                next = try await carry(heard())
            case let .checkPrefix(offset, theirs)?:
                // Resume: the receiver has `offset` bytes; continue only if they are ours.
                NearbyLog.logger.debug("\(file.relative): the receiver has \(offset) bytes; checking they are ours")
                let prefix = await Transfer.hash(fd, count: offset)
                let ours = prefix.map { Transfer.hex($0.finalize()) == theirs } ?? false
                if ours, let prefix { hasher = prefix }
                next = try await carry(machine.prefixChecked(offset, ours: ours))
            case let .compareHeld(theirs)?:
                // The receiver holds a file of our size at that name: hashed only now, so a new
                // file is never hashed before it is sent. The same hash sends nothing.
                NearbyLog.logger.debug("\(file.relative): the receiver holds \(file.size) bytes at that name (sha256 \(theirs.prefix(64))); hashing ours")
                let whole = await Transfer.hash(fd, count: file.size)
                let ours = whole.map { Transfer.hex($0.finalize()) }
                if let ours { sha = ours }
                next = try await carry(machine.heldHashed(ours))
            case let .sendData(offset)?:
                if let permits {
                    guard await permits.take() else { throw await cancelled() }
                    placed = true
                }
                try await sendData(from: offset, hasher: hasher)
                next = try await carry(heard())
            case let .delivered(confirmed)?:
                // Nothing sent: every byte counts as skipped, and the file as already there.
                let none = machine.alreadyThere
                var sent = Events.FileSent(
                    transfer: transfer, peer: peer, path: file.relative, bytes: file.size, skipped: none ? file.size : skipped, sha256: sha,
                    seconds: Transfer.seconds(since: started), alreadyThere: none || confirmed.alreadyThere == true ? true : nil)
                // Two files of one name (dA/x.txt, dB/x.txt) told apart: where each came from, and
                // the name the receiver gave the one it could not save under its own.
                sent.source = file.source
                sent.savedAs = confirmed.savedName(offered: file.relative)
                sink.emit(sent)
                return
            case .send?, .fail?:
                return  // carried out by `carry`, never returned
            }
        }
    }
}
