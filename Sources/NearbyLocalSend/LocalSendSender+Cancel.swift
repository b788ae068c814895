import Foundation
import NearbyBase
import NearbyHTTP
import NearbyTransfer

/// A receiver that cancels (its *Cancel* button) POSTs `/cancel?sessionId=` to the sender, at the
/// port and protocol the sender's prepare-upload `info` named (the official app's
/// `receive_controller.dart` `cancelSession`); the official sender then stops its uploads
/// (`onCancelReceived`, `cancelSessionByReceiver`). So while nearby sends, it serves that port:
/// a `/cancel` for its session from the receiver's address (and, when one is shown, the
/// receiver's certificate) stops the uploads at once, and the command says the receiver cancelled.
package final class LocalSendCancelWatch: Sendable {
    struct Expecting: Sendable {
        var session: String
        var host: String
        var fingerprint: String?
    }

    private let state = Locked<(expecting: Expecting?, heard: Bool)>((nil, false))
    private let stream: AsyncStream<Void>
    private let feed: AsyncStream<Void>.Continuation

    package init() {
        (stream, feed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The session the device gave us: only a cancel that names it counts.
    func expect(session: String, from target: LocalSendTarget) {
        state.withLock { $0.expecting = Expecting(session: session, host: target.host, fingerprint: target.fingerprint) }
    }

    /// Whether the receiver cancelled our session.
    package var heard: Bool { state.withLock { $0.heard } }

    /// A `/cancel`: true when it is the receiver's, for our session (then `cancelled()` returns).
    func hear(_ request: LocalSendRequest) -> Bool {
        let matched = state.withLock { state -> Bool in
            guard let expecting = state.expecting, request.query["sessionId"] == expecting.session, request.host == expecting.host
            else { return false }
            // A certificate shown must be the receiver's; none shown (an older app): its address, as the official app checks it.
            if let shown = request.clientFingerprint, let known = expecting.fingerprint, !LocalSendIdentity.sameFingerprint(shown, known) {
                return false
            }
            state.heard = true
            return true
        }
        if matched { feed.yield() }
        return matched
    }

    /// Returns when the receiver cancelled, or when the task is cancelled.
    func cancelled() async {
        for await _ in stream { return }
    }
}

/// What a sending command's server answers: `info` and `register` with our info (a device that
/// asks who we are), `cancel` for the watch; nothing else is taken.
struct SendingRoutes: LocalSendRoutes {
    let me: DeviceMessage
    let watch: LocalSendCancelWatch

    func handle(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer {
        guard request.method == .POST, request.path == LocalSendDefaults.apiPrefix + "/cancel" else {
            // `info` and `register` as a browsing command answers them, the device heard not kept.
            return await RegisterRoutes(me: me, heard: { _ in }).handle(request, body: body)
        }
        guard (try? await body.whole(limit: 1024)) != nil else { return .status(413, keepAlive: false) }
        _ = watch.hear(request)
        // 200 whatever it names, as the official app answers a cancel.
        return .status(200)
    }
}

extension LocalSendSender {
    /// `sendFiles`, while `server` (listening on the port our `info` names) answers the receiver's
    /// `/cancel`: when it comes, the uploads stop at once and the outcome is "the receiver
    /// cancelled" (declined, exit 3). Without a server, `sendFiles` alone.
    package func sendFiles(
        _ files: [OutgoingFile], to target: LocalSendTarget, pin: String?, timeout: Duration, hearingCancelOn server: LocalSendServer?
    ) async throws(NearbyError) {
        guard let server else {
            try await sendFiles(files, to: target, pin: pin, timeout: timeout)
            return
        }
        let watch = LocalSendCancelWatch()
        let sender = LocalSendSender(http: http, me: me, events: events, watch: watch)
        var info = me
        info.announce = nil
        let routes = SendingRoutes(me: info, watch: watch)
        let outcome: Result<Void, NearbyError>? = await withTaskGroup(of: Result<Void, NearbyError>?.self) { group in
            group.addTask {
                await server.run(routes)
                return nil
            }
            group.addTask {
                await watch.cancelled()
                if Task.isCancelled { return nil }
                // The receiver's cancel is answered before the server goes.
                await server.settled(within: .seconds(2))
                return .failure(.declined(peer: Self.name(target), reason: "the receiver cancelled the transfer"))
            }
            group.addTask {
                do throws(NearbyError) {
                    try await sender.sendFiles(files, to: target, pin: pin, timeout: timeout)
                    return .success(())
                } catch {
                    // Stopped because the receiver cancelled: that is the outcome, not the stop.
                    if watch.heard { return .failure(.declined(peer: Self.name(target), reason: "the receiver cancelled the transfer")) }
                    return .failure(error)
                }
            }
            var first: Result<Void, NearbyError>?
            while let next = await group.next() {
                if let next {
                    first = next
                    break
                }
            }
            group.cancelAll()
            return first
        }
        switch outcome {
        case .success?: return
        case let .failure(error)?: throw error
        case nil: throw .cancelled("sending to \(Self.name(target))")
        }
    }
}
