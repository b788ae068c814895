import NIOCore
import Synchronization
import NearbyBase
import NearbyWire

/// A bundle of small files arriving on one channel (`Bundle`): its records read by `BundleDecoder`
/// on the link's task, each file written, checked and placed by a `FileReceiver` of its own — the
/// same partial file, quota, SHA-256 check, atomic placement and events as a file on a channel of
/// its own — whose answers (`confirm`, `reset`) become result records on the bundle's channel
/// (`BundleFilePort`). The channel closes after the last result. At most `unplaced` of its files
/// hold a descriptor at once: the next waits (and with it the link's reading) until one is placed.
package final class BundleReceiver: ChannelEnd {
    /// Files written and waiting to be placed at once, per bundle.
    static let unplaced = 16

    private struct State {
        var decoder: BundleDecoder
        /// The file whose bytes are arriving, and its port.
        var current: (file: FileReceiver, port: BundleFilePort)?
        /// Files begun whose result has not gone out yet.
        var pending = 0
        /// The sender's close arrived (every record was whole).
        var closed = false
        /// Our close went out, or the bundle was given up.
        var ended = false
    }

    let channel: UInt32
    let saveDirectory: String
    let intake: any FileMaking
    /// The link the bundle arrives on: its files are made for it (`FileMaking`).
    let link: Link
    private let state: Locked<State>
    private let permits = StartPermits(BundleReceiver.unplaced)

    package init(channel: UInt32, announced: UInt64, saveDirectory: String, intake: any FileMaking, link: Link) {
        self.link = link
        self.channel = channel
        self.saveDirectory = saveDirectory
        self.intake = intake
        // A sender that lists `dates` saw ours, so each of its records has a modification time.
        state = Locked(State(decoder: BundleDecoder(announced: announced, dates: link.peer.features.contains(FrameBody.datesFeature))))
    }

    /// A frame of the sender on the bundle's channel, from the link's task.
    package func received(_ message: ChannelMessage, on port: any ChannelPort) async throws(ProtocolViolation) {
        switch message {
        case let .data(bytes):
            let pieces: [BundleDecoder.Piece]
            do {
                pieces = try state.withLock { (state: inout State) throws(BundleDecoder.Illegal) in try state.decoder.feed(bytes) }
            } catch {
                throw .malformed("bundle on channel \(channel): \(error)")
            }
            for piece in pieces { await take(piece, on: link) }
            await link.consumed(bytes.readableBytes, on: channel)
        case .close:
            do {
                try state.withLock { (state: inout State) throws(BundleDecoder.Illegal) in
                    try state.decoder.close()
                    state.closed = true
                }
            } catch {
                throw .malformed("bundle on channel \(channel): \(error)")
            }
            await endIfDone(on: link)
        case let .reset(reset):
            abandon(code: reset.code, reason: "the sender stopped: \(String(reset.reason.prefix(FrameBody.maxReasonBytes)))")
        case .open, .openReply, .start, .window:
            throw .unexpected("\(message.kind) on the peer's bundle channel \(channel)")
        }
    }

    private func take(_ piece: BundleDecoder.Piece, on link: Link) async {
        switch piece {
        case let .begin(entry):
            guard await permits.take() else { return }
            let offer = FrameBody.Open(kind: .file, path: entry.path, size: entry.size, key: entry.key, modified: entry.modified)
            let file = await intake.receiver(
                for: offer, parts: SafePath.components(of: entry.path), channel: channel, in: saveDirectory, on: link, resuming: false, comparing: false)
            let port = BundleFilePort(index: entry.index, link: link, bundle: self)
            let gone = state.withLock { state -> Bool in
                guard !state.ended else { return true }
                state.current = (file, port)
                state.pending += 1
                return false
            }
            guard !gone else {
                intake.partials.release(file.partial)
                permits.release()
                return
            }
            await file.start(FrameBody.Start(offset: 0), on: port)
        case let .bytes(bytes):
            guard let (file, port) = state.withLock({ $0.current }), !port.answered else { return }
            await file.data(bytes, on: port)
        case let .end(digest):
            guard let (file, port) = state.withLock({ state in
                defer { state.current = nil }
                return state.current
            }), !port.answered else { return }
            await file.end(FrameBody.Close(sha256: Transfer.hex(digest), bytes: file.size), on: port)
        }
    }

    /// One file's result, from its port: sent once, then the place it held is free.
    func answered(_ index: Int, _ result: Bundle.Result, on link: Link) async {
        var record = ByteBuffer()
        Bundle.writeResult(index, result, into: &record)
        await link.send(Frame(kind: .data, channel: channel, payload: record))
        permits.release()
        state.withLock { $0.pending -= 1 }
        await endIfDone(on: link)
    }

    /// After the sender's close and the last result: our close, and the channel is over.
    private func endIfDone(on link: Link) async {
        let done = state.withLock { state -> Bool in
            guard state.closed, state.pending == 0, !state.ended else { return false }
            state.ended = true
            return true
        }
        guard done else { return }
        await link.send(FrameBody.frame(.close, FrameBody.Close(sha256: "", bytes: state.withLock { $0.decoder.announced }), channel: channel))
        link.endChannel(channel)
    }

    /// The bundle ends before its last file (the link went, the sender reset it): the file being
    /// written fails and its partial file goes — a bundle is not resumed; its files are sent again.
    package func linkEnded(_ reason: CloseReason) {
        reason.isOurLeaving
            ? abandon(code: .cancelled, reason: "cancelled here (\(reason))")
            : abandon(code: .connectionLost, reason: "the peer vanished mid-transfer (\(reason))")
    }

    func abandon(code: TransferCode, reason: String) {
        let current = state.withLock { state in
            defer { state.current = nil }
            state.ended = true
            return state.current
        }
        guard let (file, port) = current, port.markAnswered() else { return }
        file.abandon(code: code, reason: reason, keepPartial: false)
    }
}

/// What one file of a bundle sees as its link (`ChannelPort`): everything goes to the real link,
/// but its end becomes a result record of the bundle instead of a `close` or `reset` of a channel,
/// and window and channel ends are the bundle's business.
final class BundleFilePort: ChannelPort {
    let index: Int
    let link: Link
    let bundle: BundleReceiver
    private let once = Atomic(false)

    init(index: Int, link: Link, bundle: BundleReceiver) {
        self.index = index
        self.link = link
        self.bundle = bundle
    }

    /// Whether the file's result has been decided (it is then left alone).
    var answered: Bool { once.load(ordering: .acquiring) }

    /// Decides the result; false when it was decided already.
    func markAnswered() -> Bool { once.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }

    var peer: AuthenticatedPeer { link.peer }
    var account: ResourceBudget.Account { link.account }
    func send(_ frame: Frame) async { await link.send(frame) }
    func send(contentsOf frames: [Frame]) async { await link.send(contentsOf: frames) }
    func sendData(_ chunk: inout ByteBuffer, count: Int, on channel: UInt32) async { await link.sendData(&chunk, count: count, on: channel) }
    func consumed(_ count: Int, on channel: UInt32) async {}
    func endChannel(_ id: UInt32) {}

    func confirm(_ close: FrameBody.Close, on channel: UInt32) async {
        guard markAnswered() else { return }
        let savedAs = close.savedAs
        await bundle.answered(index, close.alreadyThere == true ? .alreadyThere(savedAs: savedAs) : .placed(savedAs: savedAs), on: link)
    }

    func reset(_ reset: FrameBody.Reset, on channel: UInt32) async {
        guard markAnswered() else { return }
        await bundle.answered(index, .failed(code: reset.code, reason: reset.reason), on: link)
    }
}

/// Where the files of a bundle are made, each by a `FileReceiver` of its own: the node's
/// `FileIntake` (its save directory, policies, quota and events), which Transfer knows only as this.
package protocol FileMaking: Sendable {
    /// The partial files being written, over every link.
    var partials: PartialFiles { get }
    /// A receiver for the file `offer` on channel `id`, at `parts` below `saveDirectory`.
    func receiver(
        for offer: FrameBody.Open, parts: [String], channel id: UInt32, in saveDirectory: String, on link: Link,
        resuming: Bool, comparing: Bool
    ) async -> FileReceiver
}
