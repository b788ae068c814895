import Foundation
import NearbyBase
import NearbyTransfer

/// The sink a resuming transfer's attempts write to: a `file-failed` that another attempt may
/// still make good is held back (the last one comes out if none does), and the `file-started` of
/// a file that resumes after an outage is followed by `resumed`.
final class HeldFailures: EventSink {
    let inner: any EventSink
    private struct State {
        var failure: Events.FileFailed?
        var resume: (attempts: Int, seconds: Double)?
    }
    private let state = Locked(State())

    init(_ inner: any EventSink) { self.inner = inner }

    func emit(_ body: some EventBody) {
        if let failed = body as? Events.FileFailed, failed.direction == "send", failed.resumable {
            state.withLock { $0.failure = failed }
            return
        }
        inner.emit(body)
        if let started = body as? Events.FileStarted, started.direction == "send",
           let resume = state.withLock({ state -> (attempts: Int, seconds: Double)? in
               defer { state.resume = nil }
               return state.resume
           }) {
            inner.emit(Events.Resumed(
                transfer: started.transfer, peer: started.peer, path: started.path, offset: started.skipped, bytes: started.bytes,
                attempts: resume.attempts, seconds: resume.seconds))
        }
    }

    func emitLine(_ line: String) { inner.emitLine(line) }

    /// The peer is back: the next `file-started` says where the file resumes.
    func resuming(attempts: Int, seconds: Double) {
        state.withLock {
            $0.failure = nil
            $0.resume = (attempts, seconds)
        }
    }

    /// No attempt is left: the failure held back comes out.
    func release() {
        if let failure = state.withLock({ state -> Events.FileFailed? in
            defer { state.failure = nil }
            return state.failure
        }) {
            inner.emit(failure)
        }
    }
}

/// Passes on everything but the kinds named (a reconnect's "still looking" is not news: `reconnecting` said it).
struct DroppingSink: EventSink {
    let inner: (any EventSink)?
    let dropping: Set<String>
    init(_ inner: (any EventSink)?, dropping: Set<String>) {
        self.inner = inner
        self.dropping = dropping
    }
    func emit(_ body: some EventBody) {
        guard !dropping.contains(type(of: body).event) else { return }
        inner?.emit(body)
    }
    func emitLine(_ line: String) { inner?.emitLine(line) }
}

