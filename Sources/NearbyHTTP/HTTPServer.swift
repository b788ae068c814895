#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import NearbyBase

/// The one HTTP serving layer of a node (LocalSend's HTTPS, the web pages' HTTP): the core's
/// `HTTPListener` accepts, each connection already admitted by the node's `Admission`; this runs
/// each connection's requests one after another under one deadline (the admission's `handshake`
/// until the first request, `idle` after every part read and every answer), counts the requests
/// being answered, and hands each request's head and body to the protocol's `HTTPRoutes`, which
/// keep only what their protocol decides.
package struct HTTPServer: Sendable {
    let listener: HTTPListener
    /// Requests being answered now (`settled`).
    let answering = Locked(0)
    /// After the server stops, how long a connection may take to end by itself: the answer being
    /// written still goes out.
    static let stopGrace: TimeAmount = .seconds(2)

    /// The port it listens on (the one asked for, or the one the system gave for 0).
    package var port: Int { listener.port }

    /// Listens on every IPv4 address (`host` "::": on every address of both families); throws what
    /// NIO throws (an `IOError` with `EADDRINUSE` when the port is taken). `secure` adds a TLS
    /// handler in front of HTTP.
    package static func bind(
        host: String = "0.0.0.0", port: Int, backlog: Int32, admission: Admission, secure: (@Sendable (any Channel) throws -> Void)? = nil
    ) async throws -> HTTPServer {
        HTTPServer(listener: try await HTTPListener.bind(host: host, port: port, backlog: backlog, admission: admission, secure: secure))
    }

    /// Waits (at most `limit`) until no request is being answered.
    package func settled(within limit: Duration = .seconds(2)) async {
        let deadline = ContinuousClock.now + limit
        while answering.withLock({ $0 }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Serves until cancelled, each admitted connection in its own child task.
    package func run(_ routes: some HTTPRoutes) async {
        await listener.run { [answering] wrapped, ticket in await Self.serve(wrapped, ticket: ticket, routes: routes, answering: answering) }
    }

    /// Requests one connection may carry, and how long after it opened it may begin another: a peer
    /// that never stops asking is closed like any other (the last answer says `close`).
    static let maxRequests = 1000
    static let lifetime: Duration = .seconds(600)

    /// One connection: requests one after another, each answered before the next is read.
    static func serve(_ wrapped: HTTPListener.Connection, ticket: Admission.Ticket, routes: some HTTPRoutes, answering: Locked<Int>) async {
        let channel = wrapped.channel
        let deadline = ConnectionDeadline(channel)
        deadline.push(ticket.limits.handshake)
        defer { deadline.cancel() }
        let opened = ContinuousClock.now
        defer { MemoryBudget.giveBackFreedMemory() }
        await withTaskCancellationHandler {
            try? await wrapped.executeThenClose { inbound, outbound in
                let parts = HTTPPartReader(inbound.makeAsyncIterator())
                let connection = HTTPConnection(channel: channel, ticket: ticket, outbound: outbound, deadline: deadline)
                let visit = routes.visit(connection)
                var served = 0
                while let part = try await parts.next() {
                    deadline.push(connection.idle)
                    guard case let .head(asked) = part else { continue }
                    served += 1
                    let head = Self.framed(asked, last: served >= maxRequests || ContinuousClock.now - opened > lifetime)
                    answering.withLock { $0 += 1 }
                    // An idle place is evicted before one in the middle of a request.
                    ticket.working(true)
                    defer {
                        answering.withLock { $0 -= 1 }
                        ticket.working(false)
                    }
                    let expects = Self.expectsContinue(head)
                    // Whether `100 Continue` went out, and whether the body was read to its end.
                    let progress = Locked((continued: false, ended: false))
                    let body = HTTPBody(next: {
                        if expects, progress.withLock({ now in defer { now.continued = true }; return !now.continued }) {
                            try await outbound.write(.head(HTTPResponseHead(version: head.version, status: .continue)))
                        }
                        let part = try await parts.next()
                        if case .end = part { progress.withLock { $0.ended = true } }
                        deadline.push(connection.idle)
                        return part
                    }, hold: { span in deadline.push(span) })
                    // A target longer than any route's is the layer's to refuse, the same for every server.
                    guard head.uri.utf8.count <= HTTPAnswer.maxURIBytes else {
                        try await HTTPAnswer.write(.uriTooLong, keepAlive: false, to: connection.outbound)
                        break
                    }
                    let keep = try await routes.answer(head, body: body, on: connection, visit: visit)
                    // The intake may decode the next request.
                    channel.triggerUserOutboundEvent(HTTPAnswered(), promise: nil)
                    deadline.push(connection.idle)
                    // Answered without the body it was waiting to be asked for: what it sends now
                    // cannot be told from a next request.
                    let unread = expects && !progress.withLock { $0.ended }
                    guard keep, head.isKeepAlive, !unread else { break }
                }
            }
        } onCancel: {
            // The server stopping: a connection that does not end by itself is closed soon after.
            channel.eventLoop.scheduleTask(in: stopGrace) { channel.close(promise: nil) }
        }
    }

    /// `head` as the routes see it: a request that asks to switch protocols (`Upgrade`, `CONNECT`:
    /// after it NIOHTTP1 parses nothing more) or the `last` one a connection may carry says
    /// `Connection: close`, so its answer does and the connection ends after it.
    static func framed(_ head: HTTPRequestHead, last: Bool) -> HTTPRequestHead {
        guard last || head.method == .CONNECT || head.headers.contains(name: "Upgrade") else { return head }
        var head = head
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        return head
    }

    /// Whether the client waits for `100 Continue` before it sends the body (curl's uploads).
    static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        head.version.major == 1 && head.version.minor >= 1
            && head.headers[canonicalForm: "Expect"].contains { $0.lowercased() == "100-continue" }
    }
}

/// The request parts of one connection, read by one task at a time (the connection's loop, then the
/// route it hands the body to).
package typealias HTTPPartReader = PartReader<HTTPServerRequestPart>

/// What a protocol answers on the shared server: its routes, and what it keeps per connection.
package protocol HTTPRoutes: Sendable {
    /// What the routes remember about one connection (LocalSend: the certificate its sender
    /// showed), made when the connection is served.
    associatedtype Visit: Sendable
    func visit(_ connection: HTTPConnection) -> Visit
    /// Answers one request (the answer written to `connection.outbound`); returns whether the
    /// connection may carry another.
    func answer(_ head: HTTPRequestHead, body: HTTPBody, on connection: HTTPConnection, visit: Visit) async throws -> Bool
}

extension HTTPRoutes where Visit == Void {
    package func visit(_ connection: HTTPConnection) {}
}

/// One connection as the routes see it: where to write, its deadline and its place in `Admission`.
package struct HTTPConnection: Sendable {
    package let channel: any Channel
    package let ticket: Admission.Ticket
    package let outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    package let deadline: ConnectionDeadline
    package var idle: Duration { ticket.limits.idle }

    /// `work`'s result, or nil (and `work` cancelled) when the connection closes first: a client gone
    /// while its request waits (LocalSend's offer, waiting for `nearby accept`) withdraws it at once.
    /// This task cancelled (the server stopping), `work` still ends and its result is still given.
    package func unlessClosed<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: WorkOrClose<T>.self) { group in
            group.addTask { .done(await work()) }
            group.addTask { [channel] in
                let closed = OneShot<Void>()
                channel.closeFuture.whenComplete { _ in closed.settle(()) }
                _ = await closed.wait()
                return Task.isCancelled ? .stopped : .closed
            }
            while let next = await group.next() {
                switch next {
                case let .done(value):
                    group.cancelAll()
                    return value
                case .closed:
                    group.cancelAll()
                    return nil
                case .stopped:
                    continue
                }
            }
            return nil
        }
    }
}

/// What ends `HTTPConnection.unlessClosed`'s wait.
enum WorkOrClose<T: Sendable>: Sendable {
    case done(T)
    case closed
    /// The wait for the close was cancelled: nothing to say.
    case stopped
}
