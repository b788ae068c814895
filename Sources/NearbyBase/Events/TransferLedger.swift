
/// What became of the files a command received, read off the events its node printed: which are
/// still coming, which arrived, and which failed for good. `nearby accept` ends with its verdict —
/// a transfer that did not deliver every byte is never success — and stops waiting once every file
/// it was sent is in and nothing more comes.
package struct TransferTally: Sendable, Equatable {
    package private(set) var inProgress: Set<String> = []
    package private(set) var received = 0
    /// Failures not made good since (a retry of the same file that arrived clears it), oldest first.
    package private(set) var failures: [Failure] = []

    package struct Failure: Sendable, Equatable {
        package let transfer: String
        package let path: String
        package let code: String
        package let reason: String

        /// The error a command ends with for it (exit status by code: io-error 8, integrity 9, else 5).
        package var error: NearbyError { .transferFailed(path: path, code: TransferCode(code), reason: reason) }
    }

    package init() {}

    /// Files received and none in progress: what was sent is in.
    package var settled: Bool { inProgress.isEmpty && (received > 0 || !failures.isEmpty) }

    mutating func started(_ transfer: String) { inProgress.insert(transfer) }

    mutating func received(_ transfer: String, path: String) {
        inProgress.remove(transfer)
        received += 1
        failures.removeAll { $0.transfer == transfer || $0.path == path }
    }

    mutating func failed(_ failure: Failure) {
        inProgress.remove(failure.transfer)
        failures.removeAll { $0.transfer == failure.transfer }
        failures.append(failure)
    }
}

/// Passes every event on and keeps the `TransferTally` of incoming files up to date; `changes`
/// wakes a waiter whenever it moves.
package final class TransferLedger: EventSink {
    private let base: any EventSink
    private let state = Locked<(tally: TransferTally, waiter: AsyncStream<Void>.Continuation?)>((TransferTally(), nil))

    package init(_ base: any EventSink) { self.base = base }

    package var tally: TransferTally { state.withLock { $0.tally } }

    /// Yields once per change (the newest waiter only).
    package func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.waiter = continuation }
        return stream
    }

    package func emit(_ body: some EventBody) {
        base.emit(body)
        record(body)
    }

    package func emitLine(_ line: String) { base.emitLine(line) }

    func record(_ body: some EventBody) {
        let waiter = state.withLock { state -> AsyncStream<Void>.Continuation? in
            switch body {
            case let started as Events.FileStarted where started.direction == "receive":
                state.tally.started(started.transfer)
            case let received as Events.FileReceived:
                state.tally.received(received.transfer, path: received.path)
            case let failed as Events.FileFailed where failed.direction == "receive":
                state.tally.failed(.init(transfer: failed.transfer, path: failed.path, code: failed.code, reason: failed.reason))
            default:
                return nil
            }
            return state.waiter
        }
        waiter?.yield()
    }
}
