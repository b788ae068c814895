import NIOCore
import NIOHTTP1
import NearbyCore
import Synchronization
import NearbyBase

/// The web pages' HTTP server: plain HTTP/1.1 on the core's `HTTPListener`, every connection
/// admitted by the core's one door (`Admission`: per address and for strangers as a whole, the
/// descriptor budget) as it is accepted, its request head bounded in size (NIOHTTP1's decoder limits) and in time
/// (the admission's `handshake` for the first, `idle` for the next), and closed when silent for
/// `idle`. What the routes do is `WebSite`'s.
package struct WebServer: Sendable {
    static let maxURIBytes = 2048

    let listener: HTTPListener
    package var port: Int { listener.port }

    /// Listens on every address (`port` 0: any free port).
    package static func bind(port: Int, admission: Admission) async throws(NearbyError) -> WebServer {
        do {
            return WebServer(listener: try await HTTPListener.bind(port: port, backlog: 256, admission: admission))
        } catch {
            throw .listenFailed("cannot listen for the web page: \(ErrorWords.listening(error, port: port))")
        }
    }

    /// Serves until cancelled, each admitted connection in its own child task.
    package func run(_ site: some WebSite) async {
        await listener.run { connection, ticket in await serve(connection, address: ticket.address, ticket: ticket, site: site) }
    }

    /// One connection: requests one after another. Until a request head arrives the `head`
    /// deadline holds; while one is answered, the `idle` one.
    func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, address: String, ticket: Admission.Ticket, site: some WebSite
    ) async {
        let limits = ticket.limits
        let deadline = ConnectionDeadline(connection.channel)
        deadline.push(limits.handshake)
        defer { deadline.cancel() }
        try? await connection.executeThenClose { inbound, outbound in
            let parts = HTTPPartReader(inbound.makeAsyncIterator())
            while let part = try await parts.next() {
                guard case let .head(head) = part else { continue }
                deadline.push(limits.idle)
                // An idle place is evicted before one in the middle of a request.
                ticket.working(true)
                defer { ticket.working(false) }
                let request = WebRequest(head: head, address: address)
                let reply = WebReply(outbound: outbound, channel: connection.channel, deadline: deadline, idle: limits.idle, keepAlive: head.isKeepAlive)
                let body = WebBody(next: {
                    let part = try await parts.next()
                    deadline.push(limits.idle)
                    return part
                })
                let keep: Bool
                if head.uri.utf8.count > Self.maxURIBytes {
                    try await reply.notFound()
                    keep = false
                } else {
                    keep = try await site.answer(request, body: body, reply: reply)
                }
                guard keep, head.isKeepAlive else { break }
                deadline.push(limits.idle)
            }
        }
    }
}

/// A request as the routes see it.
package struct WebRequest: Sendable {
    package var method: String
    package var uri: String
    package var address: String
    package var headers: HTTPHeaders

    init(head: HTTPRequestHead, address: String) {
        method = head.method.rawValue
        uri = head.uri
        self.address = address
        headers = head.headers
    }

    package init(method: String, uri: String, address: String = "10.0.0.9", headers: HTTPHeaders = [:]) {
        self.method = method
        self.uri = uri
        self.address = address
        self.headers = headers
    }
}

/// What answers the requests: the share (`WebShare`) or the upload page (`WebDropBox`). Returns
/// whether the connection may carry another request.
package protocol WebSite: Sendable {
    func answer(_ request: WebRequest, body: WebBody, reply: WebReply) async throws -> Bool
}

/// The request's body, chunk by chunk.
package struct WebBody: Sendable {
    let next: @Sendable () async throws -> HTTPServerRequestPart?

    /// The next chunk, or nil at the end of the body.
    package func chunk() async throws -> ByteBuffer? {
        while let part = try await next() {
            switch part {
            case let .body(buffer): return buffer
            case .end: return nil
            case .head: throw WebFailure.malformed
            }
        }
        throw WebFailure.closed
    }
}

enum WebFailure: Error {
    case malformed
    case closed
}

/// Closes a connection once a deadline passes that was not pushed back: one timer on its event
/// loop, re-armed only when it fires early, so pushing it back costs a lock and no task.
final class ConnectionDeadline: Sendable {
    private let channel: any Channel
    private let state = Mutex<(deadline: NIODeadline, timer: Scheduled<Void>?, done: Bool)>((.distantFuture, nil, false))

    init(_ channel: any Channel) { self.channel = channel }

    func push(_ span: Duration) {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(span / .nanoseconds(1)))
        let arm = state.withLock { state -> Bool in
            state.deadline = deadline
            return state.timer == nil && !state.done
        }
        if arm { schedule(deadline) }
    }

    private func schedule(_ deadline: NIODeadline) {
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { [self] in self.fired() }
        let stale = state.withLock { state -> Bool in
            guard !state.done else { return true }
            state.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    private enum Next { case nothing, again(NIODeadline), close }

    private func fired() {
        let next = state.withLock { state -> Next in
            state.timer = nil
            guard !state.done else { return .nothing }
            if state.deadline <= .now() {
                state.done = true
                return .close
            }
            return .again(state.deadline)
        }
        switch next {
        case .nothing: break
        case let .again(deadline): schedule(deadline)
        case .close: channel.close(promise: nil)
        }
    }

    func cancel() {
        let timer = state.withLock { state -> Scheduled<Void>? in
            state.done = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }
}
