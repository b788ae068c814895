import NIOCore
import NIOHTTP1
import NearbyBase
import NearbyTransfer

/// The uploads of a session, over kept connections: each lane sends its files one after another on
/// one TLS connection, as the official app's upload isolates each do with their HTTP client, not one
/// connection (and one handshake) a file.
extension LocalSendSender {
    /// The accepted files no lane has taken yet, with their tokens, and the files that failed.
    final class UploadQueue: Sendable {
        private let remaining: Locked<ArraySlice<(Offer, String)>>
        private let failed = Locked<[(String, NearbyError)]>([])
        init(_ accepted: [(Offer, String)]) { remaining = Locked(accepted[...]) }
        func next() -> (Offer, String)? { remaining.withLock { $0.popFirst() } }
        /// What no lane took (every lane stopped before it).
        func rest() -> [(Offer, String)] { remaining.withLock { Array($0) } }
        func fail(_ offer: Offer, _ error: NearbyError) { failed.withLock { $0.append((offer.file.relative, error)) } }
        func failures() -> [(String, NearbyError)] { failed.withLock { $0 } }
    }

    /// How an upload on a kept connection ended.
    enum Uploaded {
        /// Sent; `kept`: the device keeps the connection for the next file.
        case sent(kept: Bool)
        /// The kept connection was closed before a byte of the answer came and before a byte of the
        /// file went out: the file goes again, once, on a new connection.
        case again
        /// The device answered with a refusal (its status): `kept` as for `sent`.
        case refused(status: Int, failure: NearbyError, kept: Bool)
    }

    /// Uploads of one file when the device answers 422 (its SHA-256 did not match, the file may
    /// have changed while read): the official app's `_maxUploadAttempts`, 3.
    static let maxUploadAttempts = 3

    /// Failures of the connection itself, one after another, after which a lane stops (the
    /// device is gone: its files are not tried one by one, each waiting for its own timeout).
    static let maxConnectionFailures = 2

    /// One lane: the queue's files one after another on one connection, opened again when the device
    /// closes it (its answer says `Connection: close`, or it is found closed before the next request,
    /// as an HTTP/1.1 server may close an idle kept connection at any time). A request that found its
    /// kept connection closed before any byte of the file went out is sent once more on a new one;
    /// once a byte of the file went out, it is not sent again behind the device's back: it fails.
    /// A file that fails is that file's failure (`queue.fail`), and the lane goes on with the next,
    /// as the official app's uploads do; a file answered 422 goes again, `maxUploadAttempts` in all.
    /// Only a certificate that is not the device's, Ctrl-C, or a device that cannot be reached
    /// `maxConnectionFailures` times in a row stop the lane.
    func lane(_ queue: UploadQueue, session: String, to target: LocalSendTarget, progress: Watchdog) async throws(NearbyError) {
        var pending = queue.next()
        var again = false
        var attempts = 0
        var connectionFailures = 0
        /// The pending file failed: said, counted, and the next one taken.
        func fail(_ offer: Offer, _ failure: NearbyError) {
            queue.fail(offer, failure)
            pending = queue.next()
            again = false
            attempts = 0
        }
        while let (offer, _) = pending {
            let opened: LocalSendHTTP.Opened
            do {
                opened = try await http.open(
                    host: target.host, port: target.port, https: target.https, expectedFingerprint: target.fingerprint, timeout: .seconds(30))
            } catch {
                let failure = failed(offer, session: session, target: target, error)
                connectionFailures += 1
                if Task.isCancelled || Self.stopsTheBatch(failure) { throw failure }
                fail(offer, failure)
                if connectionFailures >= Self.maxConnectionFailures { return }
                continue
            }
            do {
                try await opened.channel.executeThenClose { inbound, outbound in
                    let reader = PartReader<HTTPClientResponsePart>(inbound.makeAsyncIterator())
                    var served = 0
                    while let (offer, token) = pending {
                        // Closed by the device since its last answer: a new connection.
                        if served > 0, !opened.channel.channel.isActive { return }
                        let connection = Kept(opened: opened, reader: reader, outbound: outbound, reused: served > 0)
                        let uploaded: Uploaded
                        do throws(NearbyError) {
                            uploaded = try await upload(
                                offer, token: token, session: session, to: target, progress: progress, over: connection, again: again || attempts > 0)
                        } catch {
                            // The connection failed under this file: the file's failure, said.
                            if Task.isCancelled || Self.stopsTheBatch(error) { throw error }
                            connectionFailures += 1
                            fail(offer, error)
                            return
                        }
                        connectionFailures = 0
                        served += 1
                        switch uploaded {
                        case let .sent(kept):
                            again = false
                            attempts = 0
                            pending = queue.next()
                            if !kept { return }
                        case .again:
                            again = true
                            return
                        case let .refused(status, failure, kept):
                            attempts += 1
                            if status == 422, attempts < Self.maxUploadAttempts {
                                again = false
                            } else {
                                emitFailed(offer, session: session, target: target, failure)
                                fail(offer, failure)
                            }
                            if !kept { return }
                        }
                    }
                }
            } catch {
                let failure = (error as? NearbyError) ?? .connectionFailed("\(Self.name(target)): \(ErrorWords.describe(error))")
                if Task.isCancelled || Self.stopsTheBatch(failure) { throw failure }
                if let (offer, _) = pending { fail(offer, failure) }
            }
            if connectionFailures >= Self.maxConnectionFailures { return }
        }
    }

    /// A failure that is not one file's: a certificate that is not the device's (exit 9), Ctrl-C.
    static func stopsTheBatch(_ failure: NearbyError) -> Bool {
        failure.exitStatus == .identityCheckFailed || failure.exitStatus == .interrupted || failure.isCancellation
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
            return .refused(status: answer.response.status, failure: Self.refusal(answer.response, target: target, pin: nil), kept: answer.kept)
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
