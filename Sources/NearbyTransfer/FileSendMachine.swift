import NearbyBase
/// One outgoing file on its channel, from our offer to its one end, as a pure state machine: the
/// sending half of the file protocol (docs/protocol.md). What the receiver answers goes in, and out
/// come the actions the sender carries out (`FileSendMachine+Actions.swift`: send this frame, check
/// the receiver's prefix, send the data, the file is delivered or failed); an answer out of turn is
/// an `Illegal` error, never a file reported sent.
struct FileSendMachine: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        /// Our `open` went out; waiting for the receiver's answer.
        case opening
        /// The receiver took the file and holds one of its size at that name, whose SHA-256 it
        /// says is `held`: we hash ours to compare. `offset` and `prefixSHA256` are its partial
        /// file's, for when the hashes differ.
        case comparing(held: String, offset: UInt64, prefixSHA256: String?)
        /// The receiver took the file; we may start at `offset`.
        case accepted(offset: UInt64)
        /// `start` went out; `position` bytes of the file are sent.
        case sending(position: UInt64)
        /// Every byte and our `close` (with the file's SHA-256) went out: the receiver must confirm.
        case halfClosed(sha256: String)
        /// The receiver confirmed the same SHA-256.
        case closed
        /// Refused, reset by either side, or the link went.
        case reset
    }

    package enum Illegal: Error, Sendable, Equatable {
        case secondReply
        case dataBeforeStart
        case startTwice
        /// More bytes than the file has.
        case pastEnd(size: UInt64)
        /// Our `close` before every byte went out.
        case closeBeforeEnd(position: UInt64, size: UInt64)
        /// The receiver's `close` before ours.
        case confirmBeforeClose
        case afterEnd
    }

    package let size: UInt64
    /// The channel the file goes on: the frames the machine asks for carry it.
    package let channel: UInt32
    package private(set) var state = State.opening
    /// No data went: the receiver's copy at that name has our SHA-256 (`heldHashed`).
    package private(set) var alreadyThere = false

    package init(size: UInt64, channel: UInt32 = 0) {
        self.size = size
        self.channel = channel
    }

    /// The receiver answered: accepted from `offset` (what it has, at most the file), or refused.
    /// Returns the offset to resume from, nil when refused.
    /// With `held` (a complete file of `count` bytes there, with that SHA-256) of our size, we
    /// compare hashes first (`comparing`).
    package mutating func replied(
        accept: Bool, offset: UInt64, held: (count: UInt64, sha256: String)? = nil, prefixSHA256: String? = nil
    ) throws(Illegal) -> UInt64? {
        guard state == .opening else { throw state == .reset || state == .closed ? .afterEnd : .secondReply }
        if accept, let held, held.count == size {
            state = .comparing(held: held.sha256, offset: min(offset, size), prefixSHA256: prefixSHA256)
            return min(offset, size)
        }
        guard accept else {
            state = .reset
            return nil
        }
        let start = min(offset, size)
        state = .accepted(offset: start)
        return start
    }

    /// We start sending at `offset`: what was accepted, or 0 when the receiver's bytes are not ours.
    package mutating func start(at offset: UInt64) throws(Illegal) {
        switch state {
        case let .accepted(accepted):
            state = .sending(position: offset <= accepted ? offset : 0)
        case .opening, .comparing: throw .dataBeforeStart
        case .sending, .halfClosed: throw .startTwice
        case .closed, .reset: throw .afterEnd
        }
    }

    /// `count` more bytes go out.
    package mutating func sent(_ count: Int) throws(Illegal) {
        switch state {
        case let .sending(position):
            guard count >= 0, position + UInt64(count) <= size else { throw .pastEnd(size: size) }
            state = .sending(position: position + UInt64(count))
        case .opening, .comparing, .accepted: throw .dataBeforeStart
        case .halfClosed, .closed, .reset: throw .afterEnd
        }
    }

    /// Our hash of the whole file (nil: it could not be read) against the receiver's `held`: the
    /// same, and our `close` goes out without data (true); else the file is sent (false), from the
    /// receiver's partial when it had one (`accepted`). A receiver's claim is believed only when
    /// it is our own hash: a lie with another is a file sent in full.
    package mutating func heldHashed(ours sha256: String?) throws(Illegal) -> Bool {
        guard case let .comparing(held, offset, _) = state else {
            throw state == .closed || state == .reset ? .afterEnd : .secondReply
        }
        guard let sha256, sha256 == held else {
            state = .accepted(offset: offset)
            return false
        }
        alreadyThere = true
        state = .halfClosed(sha256: sha256)
        return true
    }

    /// Our `close` goes out with the file's SHA-256.
    package mutating func finished(sha256: String) throws(Illegal) {
        switch state {
        case let .sending(position):
            guard position == size else { throw .closeBeforeEnd(position: position, size: size) }
            state = .halfClosed(sha256: sha256)
        case .opening, .comparing, .accepted: throw .dataBeforeStart
        case .halfClosed, .closed, .reset: throw .afterEnd
        }
    }

    /// The receiver's `close`: true when it confirms our SHA-256 (the file is delivered), false when
    /// it differs (damaged on the way: the transfer failed).
    package mutating func confirmed(sha256: String) throws(Illegal) -> Bool {
        switch state {
        case let .halfClosed(ours):
            state = ours == sha256 ? .closed : .reset
            return ours == sha256
        case .opening, .comparing, .accepted, .sending: throw .confirmBeforeClose
        case .closed, .reset: throw .afterEnd
        }
    }

    /// Stops the file. False when it had ended already.
    @discardableResult
    package mutating func reset() -> Bool {
        switch state {
        case .closed, .reset: return false
        default:
            state = .reset
            return true
        }
    }

    package var position: UInt64 {
        switch state {
        case let .sending(position): position
        case .halfClosed, .closed: size
        default: 0
        }
    }
}

extension FileSendMachine.Illegal: CustomStringConvertible {
    /// In words, for the error that fails the transfer.
    package var description: String {
        switch self {
        case .secondReply: "a second answer to the offer"
        case .dataBeforeStart: "data before the receiver took the file"
        case .startTwice: "a second start"
        case let .pastEnd(size): "more than the file's \(size) bytes"
        case let .closeBeforeEnd(position, size): "the end after \(position) of \(size) bytes"
        case .confirmBeforeClose: "the receiver's confirmation before our end"
        case .afterEnd: "a step after the file ended"
        }
    }
}
