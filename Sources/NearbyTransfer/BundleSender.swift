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

/// Small files going out together on one channel (`Bundle`): read and hashed first (a bundle is at
/// most `Bundle.maxBytes`), offered once, sent as records within the receiver's window, and each
/// reported as the receiver's result record for it arrives — the same `file-started`, `progress`,
/// `file-sent` and `file-failed` events as a file on a channel of its own.
package enum BundleSender {
    /// One file of a bundle, read.
    struct Item {
        let file: OutgoingFile
        let key: String
        let batch: Events.Progress.Batch?
        let content: ByteBuffer
        let sha256: String
        let digest: SHA256.Digest
    }

    /// Sends `files` (each at most `Bundle.maxFileBytes`, together at most `Bundle.maxBytes`) as one
    /// bundle on `link`; `delivered` is told of each file the receiver placed. A file that fails is
    /// reported and the first failure thrown after the others' results. With `permits`, the bundle
    /// holds as many places as the receiver may keep its files open at once (`BundleReceiver.unplaced`).
    package static func send(
        _ files: [(OutgoingFile, Events.Progress.Batch?)], link: Link, sender: PeerID, sink: any EventSink, permits: StartPermits? = nil,
        delivered: @Sendable (OutgoingFile) -> Void
    ) async throws(NearbyError) {
        let peer = link.peer.ref
        // Each record carries its file's modification time to a receiver that keeps it.
        let dates = link.peer.features.contains(FrameBody.datesFeature)
        var firstFailure: NearbyError?
        func failed(_ file: OutgoingFile, transfer: String, _ code: TransferCode, _ reason: String) {
            sink.emit(Events.FileFailed(
                transfer: transfer, direction: "send", peer: peer, path: file.relative, code: code.description, reason: reason,
                resumable: code.resumable))
            if firstFailure == nil { firstFailure = .transferFailed(path: file.relative, code: code, reason: reason) }
        }
        var items: [Item] = []
        for (file, batch) in files {
            let key = Transfer.key(sender: sender, file: file)
            switch read(file) {
            case let .success(content):
                var hasher = SHA256()
                content.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                let digest = hasher.finalize()
                items.append(Item(file: file, key: key, batch: batch, content: content, sha256: Transfer.hex(digest), digest: digest))
            case let .failure(failure):
                failed(file, transfer: String(key.prefix(12)), .ioError, failure.reason)
            }
        }
        guard let first = items.first else {
            if let firstFailure { throw firstFailure }
            return
        }
        let total = items.reduce(UInt64(0)) { $0 + UInt64($1.content.readableBytes) }
        let channel = try link.openSending(offering: FrameBody.Open(kind: .bundle, path: first.file.relative, size: total, key: ""), results: true)
        defer { link.endChannel(channel.id) }
        func transfer(_ item: Item) -> String { "\(item.key.prefix(12))-\(channel.id)" }
        var unanswered = Set(items.indices)
        /// Every file not answered yet fails for the same reason.
        func failRest(_ code: TransferCode, _ reason: String) {
            for index in unanswered.sorted() { failed(items[index].file, transfer: transfer(items[index]), code, reason) }
            unanswered.removeAll()
        }
        var signals = channel.signals.makeAsyncIterator()
        guard case let .reply(reply)? = await signals.next() else {
            failRest(.connectionFailed, "the session ended before the peer answered")
            throw firstFailure ?? .connectionFailed("the session ended")
        }
        guard reply.accept else {
            failRest(reply.code ?? .refused, "the peer refused the file: \(reply.reason ?? "no reason")")
            throw firstFailure ?? .connectionFailed("refused")
        }
        var held = 0
        defer { if held > 0 { permits?.release(held) } }
        if let permits {
            let places = min(BundleReceiver.unplaced, permits.capacity)
            guard await permits.take(places) else { throw await cancelled(channel, link: link, failRest) }
            held = places
        }

        // The records, sent within the window as they are made; each file started as its record goes.
        let started = ContinuousClock.now
        var out = ByteBuffer()
        func flush(all: Bool) async throws(NearbyError) {
            while out.readableBytes > 0, all || out.readableBytes >= Transfer.chunk {
                if Task.isCancelled { throw await cancelled(channel, link: link, failRest) }
                guard let granted = await channel.credit.take(upTo: min(out.readableBytes, Transfer.chunk)) else {
                    if Task.isCancelled { throw await cancelled(channel, link: link, failRest) }
                    break  // reset or lost: the signals below say which
                }
                await link.sendData(&out, count: granted, on: channel.id)
            }
            out.discardReadBytes()
        }
        for item in items {
            sink.emit(Events.FileStarted(transfer: transfer(item), direction: "send", peer: peer, path: item.file.relative, bytes: item.file.size, skipped: 0))
            Bundle.writeRecord(
                path: item.file.relative, key: item.key, modified: dates ? item.file.modifiedNanoseconds ?? 0 : nil,
                content: item.content, digest: item.digest, into: &out)
            let size = UInt64(item.content.readableBytes)
            sink.emit(Events.Progress(
                transfer: transfer(item), direction: "send", peer: peer, path: item.file.relative, bytes: size, total: size,
                rate: Transfer.rate(size, Transfer.seconds(since: started)), batch: item.batch, done: size))
            try await flush(all: false)
        }
        try await flush(all: true)
        await link.send(FrameBody.frame(.close, FrameBody.Close(sha256: "", bytes: total), channel: channel.id))

        // The receiver's results, then its close.
        var results = BundleResults(files: items.count)
        loop: while true {
            switch await signals.next() {
            case let .data(bytes)?:
                let answers: [(index: Int, result: Bundle.Result)]
                do {
                    answers = try results.feed(bytes)
                } catch {
                    failRest(.protocolBroken, "the receiver broke the bundle protocol: \(error)")
                    break loop
                }
                await link.consumed(bytes.readableBytes, on: channel.id)
                for (index, result) in answers {
                    unanswered.remove(index)
                    let item = items[index]
                    switch result {
                    case let .placed(savedAs), let .alreadyThere(savedAs):
                        var there = false
                        if case .alreadyThere = result { there = true }
                        var sent = Events.FileSent(
                            transfer: transfer(item), peer: peer, path: item.file.relative, bytes: item.file.size, skipped: 0, sha256: item.sha256,
                            seconds: Transfer.seconds(since: started), alreadyThere: there ? true : nil)
                        sent.source = item.file.source
                        sent.savedAs = FrameBody.Close(sha256: "", bytes: 0, savedAs: savedAs).savedName(offered: item.file.relative)
                        sink.emit(sent)
                        delivered(item.file)
                    case let .failed(code, reason):
                        failed(
                            item.file, transfer: transfer(item), code,
                            "the peer could not take the file: \(String(reason.prefix(FrameBody.maxReasonBytes)))")
                    }
                }
            case .closed?:
                failRest(.protocolBroken, "the receiver closed the bundle without answering for every file")
                break loop
            case let .reset(reset)?:
                failRest(reset.code, "the receiver stopped: \(String(reset.reason.prefix(FrameBody.maxReasonBytes)))")
                break loop
            case let .lost(reason)?:
                failRest(.connectionLost, reason)
                break loop
            case .reply?, nil:
                if Task.isCancelled { throw await cancelled(channel, link: link, failRest) }
                failRest(.connectionLost, "the session ended before the receiver confirmed")
                break loop
            }
            if unanswered.isEmpty { break loop }
        }
        if let firstFailure { throw firstFailure }
    }

    /// Cancelled (Ctrl-C): the receiver hears it from a task that is not cancelled itself.
    private static func cancelled(
        _ channel: OutgoingChannel, link: Link, _ failRest: (TransferCode, String) -> Void
    ) async -> NearbyError {
        await link.tellCancelled(on: channel.id)
        failRest(.cancelled, "cancelled by the sender")
        return .cancelled("sending files")
    }

    /// A small file's bytes, read whole (it was listed at most `Bundle.maxFileBytes` long).
    static func read(_ file: OutgoingFile) -> Result<ByteBuffer, ReadFailure> {
        let fd = open(file.source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ReadFailure("cannot open \(file.source): \(Transfer.errorText(errno))")) }
        defer { close(fd) }
        let size = Int(file.size)
        var buffer = ByteBufferAllocator().buffer(capacity: size + 1)
        var failure: Int32 = 0
        // One byte more than listed: a file that grew since is told apart from one read whole.
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size + 1) { raw -> Int in
            var done = 0
            while done <= size, let base = raw.baseAddress {
                let got = pread(fd, base + done, size + 1 - done, off_t(done))
                if got < 0, errno == EINTR { continue }
                if got < 0 { failure = errno; return done }
                if got == 0 { break }
                done += got
            }
            return done
        }
        if failure != 0 { return .failure(ReadFailure("cannot read \(file.source): \(Transfer.errorText(failure))")) }
        guard count == size else {
            return .failure(ReadFailure("\(file.source) \(count < size ? "became shorter" : "grew") while sending"))
        }
        return .success(buffer)
    }

    struct ReadFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
