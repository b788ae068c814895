import NIOCore
import NIOHTTP1
import NearbyCore
import Synchronization
import NearbyBase
import NearbyTransfer

/// The uploads of a session, over kept connections: each lane sends its files one after another on
/// one TLS connection, as the official app's upload isolates each do with their HTTP client, not one
/// connection (and one handshake) a file.
extension LocalSendSender {
    /// The accepted files no lane has taken yet, with their tokens.
    final class UploadQueue: Sendable {
        private let rest: Mutex<ArraySlice<(Offer, String)>>
        init(_ accepted: [(Offer, String)]) { rest = Mutex(accepted[...]) }
        func next() -> (Offer, String)? { rest.withLock { $0.popFirst() } }
    }

    /// How an upload on a kept connection ended, when it did not fail.
    enum Uploaded {
        /// Sent; `kept`: the device keeps the connection for the next file.
        case sent(kept: Bool)
        /// The kept connection was closed before a byte of the answer came and before a byte of the
        /// file went out: the file goes again, once, on a new connection.
        case again
    }

    /// One lane: the queue's files one after another on one connection, opened again when the device
    /// closes it (its answer says `Connection: close`, or it is found closed before the next request,
    /// as an HTTP/1.1 server may close an idle kept connection at any time). A request that found its
    /// kept connection closed before any byte of the file went out is sent once more on a new one;
    /// once a byte of the file went out, it is not sent again behind the device's back: it fails.
    func lane(_ queue: UploadQueue, session: String, to target: LocalSendTarget, progress: Watchdog) async throws(NearbyError) {
        var pending = queue.next()
        var again = false
        while let (offer, _) = pending {
            let opened: LocalSendHTTP.Opened
            do {
                opened = try await http.open(
                    host: target.host, port: target.port, https: target.https, expectedFingerprint: target.fingerprint, timeout: .seconds(30))
            } catch {
                throw failed(offer, session: session, target: target, error)
            }
            do {
                try await opened.channel.executeThenClose { inbound, outbound in
                    let reader = PartReader<HTTPClientResponsePart>(inbound.makeAsyncIterator())
                    var served = 0
                    while let (offer, token) = pending {
                        // Closed by the device since its last answer: a new connection.
                        if served > 0, !opened.channel.channel.isActive { return }
                        let connection = Kept(opened: opened, reader: reader, outbound: outbound, reused: served > 0)
                        switch try await upload(offer, token: token, session: session, to: target, progress: progress, over: connection, again: again) {
                        case let .sent(kept):
                            served += 1
                            again = false
                            pending = queue.next()
                            if !kept { return }
                        case .again:
                            again = true
                            return
                        }
                    }
                }
            } catch {
                throw (error as? NearbyError) ?? .connectionFailed("\(Self.name(target)): \(ErrorWords.describe(error))")
            }
        }
    }

    /// A lane's connection, as one upload uses it.
    struct Kept: Sendable {
        let opened: LocalSendHTTP.Opened
        let reader: PartReader<HTTPClientResponsePart>
        let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
        /// It carried a request before this one.
        let reused: Bool
    }

    /// Uploads one file on a lane's connection: `file-started` (not again when `again`), progress,
    /// then `file-sent`, or `file-failed` and the failure thrown.
    func upload(
        _ offer: Offer, token: String, session: String, to target: LocalSendTarget, progress: Watchdog, over connection: Kept, again: Bool
    ) async throws(NearbyError) -> Uploaded {
        let transfer = Self.transfer(offer, session: session)
        let file = offer.file
        if !again {
            events.emit(Events.FileStarted.make(transfer: transfer, direction: "send", peer: target.ref, path: file.relative, bytes: file.size))
        }
        let started = ContinuousClock.now
        let pacer = Locked(ProgressPacer())
        let events = self.events
        let ask = LocalSendHTTP.Ask(
            method: .POST, path: Self.uploadPath(session: session, file: offer.id, token: token),
            body: .file(path: file.source, size: file.size, sent: { bytes in
                guard pacer.withLock({ $0.due(final: bytes == file.size) }) else { return }
                let seconds = max(0.001, Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000)
                events.emit(Events.Progress(
                    transfer: transfer, direction: "send", peer: target.ref, path: file.relative, bytes: bytes,
                    total: file.size, rate: (Double(bytes) / seconds).rounded()))
            }),
            keepAlive: true, timeout: .seconds(30), idle: Self.uploadIdle, answerLimit: LocalSendLimits.jsonBodyBytes)
        let answer: LocalSendHTTP.Answer
        do {
            answer = try await LocalSendHTTP.exchange(ask, on: connection.opened, reader: connection.reader, outbound: connection.outbound, progress: progress)
        } catch {
            if case .closedBeforeAnswer(_, bodySent: false) = error, connection.reused, !again, !Task.isCancelled { return .again }
            throw failed(offer, session: session, target: target, error)
        }
        guard answer.response.status == 200 else {
            let failure = Self.refusal(answer.response, target: target, pin: nil)
            emitFailed(offer, session: session, target: target, failure)
            throw failure
        }
        let seconds = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000
        events.emit(Events.FileSent.make(
            transfer: transfer, peer: target.ref, path: file.relative, bytes: file.size, sha256: offer.sha256, seconds: seconds))
        return .sent(kept: answer.kept)
    }

    /// A connection's failure as the file's: `file-failed` said, the outcome returned.
    func failed(_ offer: Offer, session: String, target: LocalSendTarget, _ error: LocalSendHTTP.Failure) -> NearbyError {
        let failure = Task.isCancelled
            ? NearbyError.cancelled("sending \(offer.file.relative) to \(Self.name(target))") : Self.nearbyError(error, target: target)
        emitFailed(offer, session: session, target: target, failure)
        return failure
    }

    func emitFailed(_ offer: Offer, session: String, target: LocalSendTarget, _ failure: NearbyError) {
        events.emit(Events.FileFailed.make(
            transfer: Self.transfer(offer, session: session), direction: "send", peer: target.ref, path: offer.file.relative,
            code: failure.code, reason: failure.errorDescription ?? failure.code))
    }

    static func transfer(_ offer: Offer, session: String) -> String {
        "ls-" + offer.id + "-" + String(session.prefix(8).filter { $0.isLetter || $0.isNumber })
    }
}
