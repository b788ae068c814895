import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One channel on one link.
struct ChannelKey: Hashable {
    let link: ObjectIdentifier
    let channel: UInt32
    init(_ link: Link, _ channel: UInt32) {
        self.link = ObjectIdentifier(link)
        self.channel = channel
    }
}

/// The file transfers of a node: channels it sends on, files it receives.
struct FileTransfers {
    var outgoing: [ChannelKey: OutgoingChannel] = [:]
    var incoming: [ChannelKey: IncomingFile] = [:]
}

/// What the receiver says about a file we send: answers, flow-control credit, the end.
final class OutgoingChannel: Sendable {
    enum Signal: Sendable {
        case reply(Control.OpenReply)
        case closed(Control.Close)
        case reset(Control.Reset)
        case lost(String)
    }

    let id: UInt32
    /// Answers and the end: a handful per channel (the multiplexer refuses repeats).
    let signals: AsyncStream<Signal>
    let continuation: AsyncStream<Signal>.Continuation
    /// What the receiver lets us send, summed however many window frames it sends.
    let credit = CreditGate(initial: Transfer.window)

    init(id: UInt32) {
        self.id = id
        (signals, continuation) = AsyncStream<Signal>.makeStream()
    }
}

/// A file arriving: written to a hidden partial file beside its destination, hashed as it comes,
/// put in place under a name that overwrites nothing once the sender's SHA-256 matches.
final class IncomingFile {
    let transfer: String
    let peer: PeerRef
    let relative: String
    let directory: String
    let name: String
    let partial: String
    let size: UInt64
    /// Set once the sender starts: writes and hashes what arrives, off the event loop.
    var writer: FileWriter?
    var prefixHasher: SHA256?
    var offered: UInt64 = 0
    var position: UInt64 = 0
    var skipped: UInt64 = 0
    var started = ContinuousClock.now
    var lastProgress = ContinuousClock.now

    init(transfer: String, peer: PeerRef, relative: String, directory: String, name: String, partial: String, size: UInt64) {
        self.transfer = transfer
        self.peer = peer
        self.relative = relative
        self.directory = directory
        self.name = name
        self.partial = partial
        self.size = size
    }
}

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
        for file in files {
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            let channel = OutgoingChannel(id: try newChannelID(on: link))
            transfers.outgoing[ChannelKey(link, channel.id)] = channel
            defer {
                transfers.outgoing[ChannelKey(link, channel.id)] = nil
                muxes[link]?.finish(channel.id)
            }
            try await Self.send(file, over: channel, link: link, sender: identity.peerID, sink: sink)
        }
    }

    /// A new channel of ours on `link`, within the link's cap.
    func newChannelID(on link: Link) throws(NearbyError) -> UInt32 {
        guard let id = muxes[link]?.open() else {
            throw .connectionFailed("too many channels open with \(link.peer.id) (at most \(ChannelMux.Limits().channels))")
        }
        return id
    }

    /// Returns window to the peer for `count` bytes of its data we consumed, when worth a frame.
    func consumed(_ count: Int, on channel: UInt32, of link: Link) async {
        if let grant = muxes[link]?.consumed(channel, count) { await link.send(grant) }
    }

    /// The sending half, outside the actor: reading, hashing and waiting for credit never hold up
    /// the node.
    nonisolated static func send(
        _ file: OutgoingFile, over channel: OutgoingChannel, link: Link, sender: PeerID, sink: any EventSink
    ) async throws(NearbyError) {
        let transfer = String(Transfer.key(sender: sender, file: file).prefix(12)) + "-\(channel.id)"
        let peer = link.peer.ref
        func failed(_ code: String, _ reason: String) -> NearbyError {
            // The receiver keeps what arrived only when the transfer was cut (cancel, lost link);
            // a refusal, a full disk or damaged data leave nothing to resume.
            let resumable = code == "cancelled" || code == "connection-lost"
            sink.emit(Events.FileFailed(transfer: transfer, direction: "send", peer: peer, path: file.relative, code: code, reason: reason, resumable: resumable))
            return .transferFailed(path: file.relative, code: code, reason: reason)
        }
        /// Cancelled (Ctrl-C): tell the receiver from a task that is not cancelled itself.
        func cancelled() async -> NearbyError {
            await Task { await link.send(Control.frame(.reset, Control.Reset(reason: "the sender cancelled", code: "cancelled"), channel: channel.id)) }.value
            _ = failed("cancelled", "cancelled by the sender")
            return .cancelled("sending \(file.relative)")
        }
        let fd = open(file.source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failed("io-error", "cannot open \(file.source): \(Transfer.errorText(errno))") }
        let reader = FileReader(descriptor: fd)
        defer { reader.close() }

        var signals = channel.signals.makeAsyncIterator()
        await link.send(Control.frame(.open, Control.Open(kind: "file", path: file.relative, size: file.size, key: Transfer.key(sender: sender, file: file)), channel: channel.id))
        guard case let .reply(reply)? = await signals.next() else { throw failed("connection-failed", "the session ended before the peer answered") }
        guard reply.accept else { throw failed(reply.code ?? "refused", "the peer refused the file: \(reply.reason ?? "no reason")") }

        // Resume: the receiver has `offset` bytes; continue only if they are ours.
        var hasher = SHA256()
        var offset = min(reply.offset, file.size)
        if offset > 0 {
            NearbyLog.logger.debug("\(file.relative): the receiver has \(offset) bytes; checking they are ours")
            var prefix = SHA256()
            if Transfer.hash(fd, count: offset, into: &prefix), Transfer.hex(prefix.finalize()) == reply.prefixSHA256 {
                hasher = prefix
            } else {
                offset = 0
            }
        }
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
                case let .reset(reset)?: throw failed(reset.code, "the receiver stopped: \(reset.reason)")
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
            await link.send(Frame(kind: .data, channel: channel.id, payload: piece))
            position += UInt64(count)
            if clock.now - lastProgress >= Transfer.progressInterval || position == file.size {
                lastProgress = clock.now
                sink.emit(Events.Progress(
                    transfer: transfer, direction: "send", peer: peer, path: file.relative, bytes: position, total: file.size,
                    rate: Transfer.rate(position - offset, Transfer.seconds(since: started))))
            }
        }
        let sha = Transfer.hex(await reader.hash().finalize())
        await link.send(Control.frame(.close, Control.Close(sha256: sha, bytes: file.size), channel: channel.id))
        while true {
            switch await signals.next() {
            case let .closed(confirmed)? where confirmed.sha256 == sha:
                sink.emit(Events.FileSent(
                    transfer: transfer, peer: peer, path: file.relative, bytes: file.size, skipped: offset, sha256: sha,
                    seconds: Transfer.seconds(since: started)))
                return
            case .closed?: throw failed("integrity", "the receiver's SHA-256 differs")
            case let .reset(reset)?: throw failed(reset.code, "the receiver refused the file: \(reset.reason)")
            case let .lost(reason)?: throw failed("connection-lost", reason)
            default: throw failed("connection-lost", "the session ended before the receiver confirmed")
            }
        }
    }

    // MARK: Routing

    /// Frames on channels above 0. The side that opened a channel sends open, start, data and the
    /// first close; the other answers with openReply, window and the confirming close or a reset.
    func channelFrame(_ frame: Frame, on link: Link) async throws(ProtocolViolation) {
        guard var mux = muxes[link] else { return }
        let verdict = try mux.receive(frame)
        muxes[link] = mux
        switch verdict {
        case .ignore: return
        case let .refuse(answer):
            await link.send(answer)
            return
        case .deliver: break
        }
        let ours = mux.isOurs(frame.channel)
        let key = ChannelKey(link, frame.channel)
        if let stream = streamParts.active[key] {
            streamFrame(frame, stream: stream, key: key)
            return
        }
        if ours {
            guard let channel = transfers.outgoing[key] else { return }
            switch frame.kind {
            case .openReply:
                if let reply = try? Control.decode(Control.OpenReply.self, from: frame) { channel.continuation.yield(.reply(reply)) }
            case .window:
                if let more = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self) { channel.credit.add(Int(more)) }
            case .close:
                if let close = try? Control.decode(Control.Close.self, from: frame) { channel.continuation.yield(.closed(close)) }
            case .reset:
                let reset = (try? Control.decode(Control.Reset.self, from: frame)) ?? Control.Reset(reason: "reset", code: "refused")
                channel.continuation.yield(.reset(reset))
                channel.credit.close()
            default:
                await protocolError(on: link, "\(frame.kind) on our own channel \(frame.channel)")
            }
            return
        }
        if frame.kind != .open, transfers.incoming[key] == nil {
            // A late frame for a channel that just ended (the peer's last window credits after a
            // stream, say): nothing to do, and no reason to end the session.
            return
        }
        switch frame.kind {
        case .open:
            if let offer = try? Control.decode(Control.Open.self, from: frame), offer.kind == "stream" {
                await streamOffered(offer, channel: frame.channel, on: link)
            } else {
                await fileOffered(frame, on: link)
            }
        case .start: await fileStarts(frame, on: link)
        case .data: await fileData(frame, on: link)
        case .close: await fileEnds(frame, on: link)
        case .reset: fileReset(frame, on: link)
        default:
            await protocolError(on: link, "\(frame.kind) on the peer's channel \(frame.channel)")
        }
    }

    private func protocolError(on link: Link, _ what: String) async {
        violated(link, what)
    }

}

extension Control {
    static func frame(_ kind: Frame.Kind, _ body: some Encodable, channel: UInt32) -> Frame {
        var frame = frame(kind, body)
        frame.channel = channel
        return frame
    }
}
