import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum Transfer {
    static let chunk = 256 << 10
    /// How far a sender may run ahead of what the receiver has written: memory stays bounded (one
    /// window per channel).
    static let window = ChannelMux.defaultWindow
    static let progressInterval = Duration.milliseconds(100)
    /// 0666 less this process's umask (read once: setting it back at once is the only way to read it).
    static let finishedMode: mode_t = {
        let mask = umask(0o022)
        umask(mask)
        return 0o666 & ~mask
    }()

    static func hex(_ digest: some Sequence<UInt8>) -> String { Hex.encode(digest) }

    /// This sender's name for a file, the same on every attempt while the file is unchanged.
    static func key(sender: PeerID, file: OutgoingFile) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(sender.rawValue)\u{0}\(file.relative)\u{0}\(file.size)\u{0}\(file.modified)".utf8))
        return String(hex(hasher.finalize()).prefix(32))
    }

    /// Feeds the first `count` bytes of the file at `fd` to `hasher`.
    static func hash(_ fd: Int32, count: UInt64, into hasher: inout SHA256) -> Bool {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var done: UInt64 = 0
        while done < count {
            let want = Int(min(UInt64(buffer.count), count - done))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(done)) }
            guard got > 0 else { return false }
            hasher.update(data: buffer[0..<got])
            done += UInt64(got)
        }
        return true
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Seconds since `start`, to the millisecond.
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        ((ContinuousClock.now - start) / .milliseconds(1)).rounded() / 1000
    }

    /// Bytes per second, whole.
    static func rate(_ bytes: UInt64, _ seconds: Double) -> Double { seconds > 0 ? (Double(bytes) / seconds).rounded() : 0 }
}

extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed), one after another.
    public func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        var before: UInt64 = 0
        for (index, file) in files.enumerated() {
            // Several files: each progress event also says where the whole batch is.
            let batch = files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil
            before += file.size
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            let channel = try link.openChannel { id in
                let channel = OutgoingChannel(id: id)
                return (.sending(channel), channel)
            }
            defer { link.channels.finish(channel.id) }
            try await Self.send(file, over: channel, link: link, sender: identity.peerID, sink: sink, batch: batch)
        }
        for directory in directories {
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            let channel = try link.openChannel { id in
                let channel = OutgoingChannel(id: id)
                return (.sending(channel), channel)
            }
            defer { link.channels.finish(channel.id) }
            try await Self.make(directory, over: channel, link: link, sink: sink)
        }
    }

    /// The sending half, outside the actor: reading, hashing and waiting for credit never hold up
    /// the node.
    nonisolated static func send(
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

    // MARK: Routing

    /// Frames on channels above 0, on the link's own task: the link's table says what runs on the
    /// channel. The side that opened a channel sends open, start, data and the first close; the
    /// other answers with openReply, window and the confirming close or a reset.
    nonisolated func channelFrame(_ frame: Frame, on link: Link) async throws(ProtocolViolation) {
        switch try link.channels.route(frame) {
        case .ignore:
            return
        case let .refuse(answer):
            await link.send(answer)
        case let .offer(frame):
            if let offer = try? Control.decode(Control.Open.self, from: frame), offer.kind == .stream {
                await streamOffered(offer, channel: frame.channel, on: link)
            } else {
                await fileOffered(frame, on: link)
            }
        case let .deliver(.stream(stream), frame):
            streamFrame(frame, stream: stream)
        case let .deliver(.sending(channel), frame):
            try Self.answer(frame, to: channel)
        case let .deliver(.receiving(file), frame):
            switch frame.kind {
            case .start: await fileStarts(frame, file, on: link)
            case .data: await fileData(frame, file, on: link)
            case .close: await fileEnds(frame, file, on: link)
            case .reset: fileReset(frame, file)
            default: throw .unexpected("\(frame.kind) on the peer's channel \(frame.channel)")
            }
        }
    }

    /// The receiver's answers on a file we send.
    private nonisolated static func answer(_ frame: Frame, to channel: OutgoingChannel) throws(ProtocolViolation) {
        switch frame.kind {
        case .openReply:
            if let reply = try? Control.decode(Control.OpenReply.self, from: frame) { channel.continuation.yield(.reply(reply)) }
        case .window:
            if let more = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self) { channel.credit.add(Int(more)) }
        case .close:
            if let close = try? Control.decode(Control.Close.self, from: frame) { channel.continuation.yield(.closed(close)) }
        case .reset:
            let reset = (try? Control.decode(Control.Reset.self, from: frame)) ?? Control.Reset(reason: "reset", code: .refused)
            channel.continuation.yield(.reset(reset))
            channel.credit.close()
        default:
            throw .unexpected("\(frame.kind) on our own channel \(frame.channel)")
        }
    }
}

extension Control {
    static func frame(_ kind: Frame.Kind, _ body: some Encodable, channel: UInt32) -> Frame {
        var frame = frame(kind, body)
        frame.channel = channel
        return frame
    }
}
