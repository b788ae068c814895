import NearbyBase
/// One incoming file on its channel, from the offer to its one end, as a pure state machine: the
/// receiving half of the file protocol (docs/protocol.md). The link's task feeds it what the sender
/// does; a step the protocol does not allow is an `Illegal` error, which ends the file (or the link)
/// before a byte is written out of place.
package struct FileReceiveMachine: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        /// Offered and accepted; `resumable` bytes of an earlier attempt are on disk.
        case offered(resumable: UInt64)
        /// The sender started at `skipped`; `position` bytes of the file are written or queued.
        case receiving(position: UInt64, skipped: UInt64)
        /// Complete: the sender's close matched what arrived.
        case closed
        /// Stopped before the end: either side reset it, or the link went.
        case reset
    }

    package enum Illegal: Error, Sendable, Equatable {
        /// `start` at an offset that was not offered (only 0 or the resumable length are).
        case startMismatch(offset: UInt64)
        case secondStart
        case dataBeforeStart
        /// More bytes than the offer announced.
        case pastEnd(size: UInt64)
        case closeBeforeStart
        /// The sender closed with fewer (or other) bytes than announced.
        case incomplete(have: UInt64, announced: UInt64, size: UInt64)
        /// Anything after the file ended.
        case afterEnd
    }

    package let size: UInt64
    /// The SHA-256 of the complete file of this size already at the offered name, told the sender
    /// in our answer (`OpenReply.heldSHA256`): a close with it and no data keeps that copy.
    package let held: String?
    package private(set) var state: State

    package init(size: UInt64, resumable: UInt64 = 0, held: String? = nil) {
        self.size = size
        self.held = held
        state = .offered(resumable: resumable <= size ? resumable : 0)
    }

    /// The sender's close before any start, marked already there: it hashed its file to the very
    /// SHA-256 we hold (`held`), so nothing is sent and our copy stays. Anything else without data
    /// is a close before start.
    package mutating func keep(sha256: String, announced bytes: UInt64) throws(Illegal) {
        switch state {
        case .offered:
            guard let held, held == sha256, bytes == size else { throw .closeBeforeStart }
            state = .closed
        case .receiving: throw .incomplete(have: position, announced: bytes, size: size)
        case .closed, .reset: throw .afterEnd
        }
    }

    /// The sender starts at `offset`: 0, or the resumable length we offered. True when it resumes.
    package mutating func start(at offset: UInt64) throws(Illegal) -> Bool {
        switch state {
        case let .offered(resumable):
            guard offset == 0 || offset == resumable else { throw .startMismatch(offset: offset) }
            state = .receiving(position: offset, skipped: offset)
            return offset > 0
        case .receiving: throw .secondStart
        case .closed, .reset: throw .afterEnd
        }
    }

    /// `count` bytes arrive: where in the file they go.
    package mutating func data(_ count: Int) throws(Illegal) -> UInt64 {
        switch state {
        case .offered: throw .dataBeforeStart
        case let .receiving(position, skipped):
            guard count >= 0, position + UInt64(count) <= size else { throw .pastEnd(size: size) }
            state = .receiving(position: position + UInt64(count), skipped: skipped)
            return position
        case .closed, .reset: throw .afterEnd
        }
    }

    /// Whether the sender's `close`, announcing `bytes`, may end the file: only once every announced
    /// byte arrived. Checked before the file is put in place; `close` once it is.
    package func closable(announced bytes: UInt64) throws(Illegal) {
        switch state {
        case .offered: throw .closeBeforeStart
        case let .receiving(position, _):
            guard position == size, bytes == size else { throw .incomplete(have: position, announced: bytes, size: size) }
        case .closed, .reset: throw .afterEnd
        }
    }

    /// What the receiver does about the sender's close.
    package enum Ending: Sendable, Equatable {
        /// Every announced byte arrived and the hashes agree: put the file in place (then `close`).
        case place
        /// The file failed (code `integrity`): nothing is kept; the sentence goes to both sides.
        case fail(reason: String)
    }

    /// The sender closed announcing `bytes` and its SHA-256 `theirs`; `ours` is the hash of what
    /// arrived. A short file is told by its byte count (its hash may well be right for what came),
    /// a damaged one by the two hashes.
    package func ending(announced bytes: UInt64, theirs: String, ours: String) -> Ending {
        func grouped(_ value: UInt64) -> String { RepeatLimiter<String>.grouped(Int(clamping: value)) }
        switch state {
        case .offered: return .fail(reason: "the file ended before it started")
        case .closed, .reset: return .fail(reason: "the file had ended already")
        case let .receiving(position, _):
            if position != size {
                return .fail(reason: "the file arrived incomplete: the sender sent \(grouped(position)) of \(grouped(size)) bytes")
            }
            if bytes != size {
                return .fail(reason: "the sender's close announced \(grouped(bytes)) of \(grouped(size)) bytes")
            }
            guard theirs == ours else { return .fail(reason: "the file arrived damaged (SHA-256 \(ours) ≠ \(theirs.prefix(64)))") }
            return .place
        }
    }

    /// The file is complete and in place.
    package mutating func close(announced bytes: UInt64) throws(Illegal) {
        try closable(announced: bytes)
        state = .closed
    }

    /// Stops the file. False when it had ended already.
    @discardableResult
    package mutating func reset() -> Bool {
        switch state {
        case .closed, .reset: return false
        case .offered, .receiving:
            state = .reset
            return true
        }
    }

    /// Bytes of the file in place (written or queued), and how many of them an earlier attempt left.
    package var position: UInt64 {
        if case let .receiving(position, _) = state { return position }
        return state == .closed ? size : 0
    }
    package var skipped: UInt64 {
        if case let .receiving(_, skipped) = state { return skipped }
        return 0
    }
    package var started: Bool {
        if case .offered = state { return false }
        return true
    }
}

extension FileReceiveMachine.Illegal: CustomStringConvertible {
    /// In words, for the error that cuts the link.
    package var description: String {
        switch self {
        case let .startMismatch(offset): "a start at \(offset), which was not offered"
        case .secondStart: "a second start"
        case .dataBeforeStart: "data before start"
        case let .pastEnd(size): "more than the \(size) bytes announced"
        case .closeBeforeStart: "a close before start"
        case let .incomplete(have, announced, size): "a close announcing \(announced) bytes with \(have) of \(size) here"
        case .afterEnd: "a frame after the file ended"
        }
    }
}
