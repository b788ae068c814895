import NearbyBase
import NearbyWire
/// The sending half of the file protocol as actions, as `SessionStateMachine` returns them: each
/// step of the receiver (its answer, its close, its reset, the link's end) goes in, and what to do
/// comes out. `FileSender` only carries them out (frames, reading and hashing the file, events).
extension FileSendMachine {
    package enum Action: Sendable, Equatable {
        /// A frame for the receiver on the file's channel: `open`, `start`, `close`.
        case send(Frame)
        /// The receiver has the first `offset` bytes, with this SHA-256: see whether they are ours,
        /// then `prefixChecked`.
        case checkPrefix(offset: UInt64, sha256: String?)
        /// The receiver holds a complete file of our size at that name, with this SHA-256: hash
        /// ours, then `heldHashed`.
        case compareHeld(sha256: String)
        /// `start` went out: read the file from `offset` and send it within the receiver's window
        /// (`sent` for each piece), then `ended`.
        case sendData(from: UInt64)
        /// The receiver confirmed our SHA-256: the file is delivered.
        case delivered(FrameBody.Close)
        /// The file failed: its code and the sentence for the event and the error.
        case fail(code: TransferCode, reason: String)
    }

    /// Our offer.
    package func offer(_ open: FrameBody.Open) -> [Action] {
        [.send(FrameBody.frame(.open, open, channel: channel))]
    }

    /// The receiver's answer: refused, accepted from the start, or with some bytes already there.
    package mutating func answered(_ reply: FrameBody.OpenReply) -> [Action] {
        let accepted: UInt64?
        do {
            let held = reply.held.flatMap { count in reply.heldSHA256.map { (count: count, sha256: $0) } }
            accepted = try replied(accept: reply.accept, offset: reply.offset, held: held, prefixSHA256: reply.prefixSHA256)
        } catch {
            return broken(error)
        }
        guard let offset = accepted else {
            return [.fail(code: reply.code ?? .refused, reason: "the peer refused the file: \(reply.reason ?? "no reason")")]
        }
        if case let .comparing(held, _, _) = state { return [.compareHeld(sha256: held)] }
        return resume(from: offset, prefixSHA256: reply.prefixSHA256)
    }

    private mutating func resume(from offset: UInt64, prefixSHA256: String?) -> [Action] {
        offset > 0 ? [.checkPrefix(offset: offset, sha256: prefixSHA256)] : begin(at: 0)
    }

    /// Our hash of the whole file (nil when it could not be read) against the receiver's: the same
    /// sends our `close` alone, marked `alreadyThere` (no `start`, no data); another sends the file
    /// as when nothing was there (from the receiver's partial when its prefix is ours).
    package mutating func heldHashed(_ ours: String?) -> [Action] {
        guard case let .comparing(_, offset, prefixSHA256) = state else { return broken(.secondReply) }
        do {
            guard try heldHashed(ours: ours), let ours else { return resume(from: offset, prefixSHA256: prefixSHA256) }
            return [.send(FrameBody.frame(.close, FrameBody.Close(sha256: ours, bytes: size, alreadyThere: true), channel: channel))]
        } catch {
            return broken(error)
        }
    }

    /// Whether the receiver's first `offset` bytes are ours: resume after them, or start over.
    package mutating func prefixChecked(_ offset: UInt64, ours: Bool) -> [Action] {
        begin(at: ours ? offset : 0)
    }

    private mutating func begin(at offset: UInt64) -> [Action] {
        do {
            try start(at: offset)
        } catch {
            return broken(error)
        }
        return [.send(FrameBody.frame(.start, FrameBody.Start(offset: position), channel: channel)), .sendData(from: position)]
    }

    /// Every byte went out: our `close`, with the file's SHA-256.
    package mutating func ended(sha256: String) -> [Action] {
        do {
            try finished(sha256: sha256)
        } catch {
            return broken(error)
        }
        return [.send(FrameBody.frame(.close, FrameBody.Close(sha256: sha256, bytes: size), channel: channel))]
    }

    /// The receiver's `close`: the same SHA-256 delivers the file, another fails it.
    package mutating func receiverClosed(_ close: FrameBody.Close) -> [Action] {
        do {
            return try confirmed(sha256: close.sha256) ? [.delivered(close)] : [.fail(code: .integrity, reason: "the receiver's SHA-256 differs")]
        } catch {
            return broken(error)
        }
    }

    /// The receiver's `reset`: while we send it stopped the file; after our close it refused it.
    package mutating func receiverReset(_ stop: FrameBody.Reset) -> [Action] {
        let afterOurClose = if case .halfClosed = state { true } else { false }
        reset()
        let reason = afterOurClose ? "the receiver refused the file: \(stop.reason)" : "the receiver stopped: \(stop.reason)"
        return [.fail(code: stop.code, reason: reason)]
    }

    /// The link went (or the session ended) before the file did.
    package mutating func lost(_ reason: String) -> [Action] {
        reset()
        return [.fail(code: .connectionLost, reason: reason)]
    }

    /// A step out of turn is a bug or a peer breaking the protocol: the file is not sent.
    private mutating func broken(_ error: Illegal) -> [Action] {
        reset()
        return [.fail(code: .protocolBroken, reason: "the transfer broke the file protocol: \(error)")]
    }
}
