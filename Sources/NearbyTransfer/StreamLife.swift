import NearbyBase
/// One end of a stream, from open to its one outcome. Each direction is open until it ends — ours
/// when our input's end went out as a `close`, theirs when their `close` arrived — and the stream is
/// done only when both have. Anything that stops it before that (the session ends, the peer resets
/// it, our input or output fails, Ctrl-C) cuts it, and the first cause is the one reported: a
/// truncated stream never reads like a finished one, on either side.
package struct StreamLife: Sendable, Equatable {
    /// Why a stream stopped before both directions ended.
    package enum Cause: Error, Sendable, Equatable {
        /// The session carrying it ended (the peer was killed, the network went away).
        case sessionEnded(String)
        /// The peer reset the stream (its side failed or was interrupted).
        case peerReset(String)
        /// Our own side failed: `code` as in `error` events (`io-error` for stdin or stdout).
        case failed(code: TransferCode, reason: String)
        /// Interrupted here (Ctrl-C, or the client of a running node left).
        case cancelled
    }

    package enum State: Sendable, Equatable {
        /// Both directions flow.
        case open
        /// We sent our `close`; the peer's bytes still flow.
        case sentClose
        /// The peer's `close` arrived; ours still flow.
        case receivedClose
        /// Both directions ended: the stream is done.
        case closed
        /// Stopped before both directions ended.
        case cut(Cause)
    }

    /// A step that the protocol or our own code must never take.
    package enum Violation: Error, Equatable {
        case secondClose(ours: Bool)
        case dataAfterClose(ours: Bool)
    }

    package private(set) var state: State = .open

    package init() {}

    /// We are about to send bytes.
    package func mayWrite() throws(Violation) {
        switch state {
        case .sentClose, .closed: throw .dataAfterClose(ours: true)
        case .open, .receivedClose, .cut: return
        }
    }

    /// The peer's bytes arrived: legal until its `close`.
    package func mayRead() throws(Violation) {
        switch state {
        case .receivedClose, .closed: throw .dataAfterClose(ours: false)
        case .open, .sentClose, .cut: return
        }
    }

    /// Our input ended and our `close` went out.
    package mutating func sentClose() throws(Violation) {
        switch state {
        case .open: state = .sentClose
        case .receivedClose: state = .closed
        case .sentClose, .closed: throw .secondClose(ours: true)
        case .cut: return
        }
    }

    /// The peer's `close` arrived.
    package mutating func receivedClose() throws(Violation) {
        switch state {
        case .open: state = .receivedClose
        case .sentClose: state = .closed
        case .receivedClose, .closed: throw .secondClose(ours: false)
        case .cut: return
        }
    }

    /// Stops the stream for `cause`. False when it had ended already (done, or cut by an earlier
    /// cause, which stays the one reported).
    @discardableResult
    package mutating func cut(_ cause: Cause) -> Bool {
        switch state {
        case .closed, .cut: return false
        case .open, .sentClose, .receivedClose:
            state = .cut(cause)
            return true
        }
    }

    /// Why it was cut, or nil while it runs or once it is done.
    package var cause: Cause? {
        if case let .cut(cause) = state { return cause }
        return nil
    }

    package var isDone: Bool { state == .closed }
}

extension StreamLife.Cause {
    /// The failure a command reports for a stream cut by this cause: the same sentence, `code` and
    /// exit status whether the stream ran in this process or through a running node.
    package func error(label: String) -> NearbyError {
        let cut = "\(label) was cut"
        switch self {
        case let .sessionEnded(reason): return .transferFailed(path: cut, code: .connectionLost, reason: "the session ended: \(reason)")
        case let .peerReset(reason): return .transferFailed(path: cut, code: .streamReset, reason: "the peer reset it: \(reason)")
        case let .failed(code, reason): return .transferFailed(path: cut, code: code, reason: reason)
        case .cancelled: return .cancelled(label)
        }
    }

    /// The cause a failure of our own side means.
    package init(_ error: any Error) {
        switch error {
        case let error as NearbyError where error.isCancellation: self = .cancelled
        case let error as NearbyError: self = .failed(code: error.transferCode ?? TransferCode(error.code), reason: error.errorDescription ?? "failed")
        case is CancellationError: self = .cancelled
        default: self = .failed(code: .connectionFailed, reason: ErrorWords.describe(error))
        }
    }
}
