import NIOCore
import NIOHTTP1
import NIOPosix
import NearbyBase

/// The accept side of every HTTP server a node runs (the web pages', LocalSend's HTTPS): a listener
/// whose connections take a place in the node's `Admission` as they are accepted (over a cap:
/// closed at once), are decoded by NIOHTTP1 within `HTTPLimits.decoder` and `HTTPIntakeLimits` —
/// behind a TLS handler when the server has one (`secure`) — and are each served by a child task of
/// `run`. What a server does with a connection (routes, deadlines) stays its own.
package struct HTTPListener: Sendable {
    package typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Every answer of these servers sets its own `Content-Length` (the web pages' `WebReply`,
    /// LocalSend's `write`): NIO's own framing would strip it from any answer to a `CONNECT` — a 404
    /// with no length, which a client can only read until the connection closes (issue 51).
    static var encoder: HTTPResponseEncoder.Configuration {
        var configuration = HTTPResponseEncoder.Configuration()
        configuration.automaticallySetFramingHeaders = false
        return configuration
    }

    /// A connection accepted, with its place among the strangers' connections (nil: over a cap,
    /// closed already). Refused connections are handed on rather than failed in the initializer:
    /// a failed child initializer is an error on the server channel, which ends an async server's
    /// stream of connections, and with it the server.
    struct Admitted: Sendable {
        let channel: any Channel
        let ticket: Admission.Ticket?
    }

    /// Connections come out as plain channels, not reading (autoRead off), and are wrapped in an
    /// `NIOAsyncChannel` only by the task that serves them: one still queued when the server stops
    /// is simply closed, where an unused `NIOAsyncChannel` would trap on deinit.
    let channel: NIOAsyncChannel<Admitted, Never>
    /// The port it listens on (the one asked for, or the one the system gave for 0).
    package let port: Int

    /// Listens on every IPv4 address (`host` "::": on every address of both families); throws what
    /// NIO throws (an `IOError` with `EADDRINUSE` when the port is taken). `secure` adds a TLS
    /// handler in front of HTTP.
    package static func bind(
        host: String = "0.0.0.0", port: Int, backlog: Int32, admission: Admission, secure: (@Sendable (any Channel) throws -> Void)? = nil
    ) async throws -> HTTPListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: backlog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: HTTPIntakeLimits.headReads.perCycle)
            .childChannelOption(.recvAllocator, value: HTTPIntakeLimits.headReads.allocator)
            .childChannelOption(.autoRead, value: false)
            .bind(host: host, port: port) { channel in
                // Over a cap: closed as soon as accepted.
                guard let ticket = admission.admit(channel) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(Admitted(channel: channel, ticket: nil))
                }
                return channel.eventLoop.makeCompletedFuture {
                    try secure?(channel)
                    try Self.configure(channel.pipeline.syncOperations)
                    return Admitted(channel: channel, ticket: ticket)
                }
            }
        return HTTPListener(channel: channel, port: channel.channel.localAddress?.port ?? port)
    }

    /// NIOHTTP1's server handlers between `HTTPIntake` and `HTTPMeter` (see `HTTPIntakeLimits`), at
    /// the end of the pipeline (after TLS, when there is TLS).
    package static func configure(_ pipeline: ChannelPipeline.SynchronousOperations) throws {
        let state = HTTPIntakeState()
        try pipeline.addHandler(HTTPIntake(state))
        try pipeline.configureHTTPServerPipeline(
            // No pipelining assistance: it stops reading while an answer is pending, and a client
            // that leaves while its request waits must be noticed (its EOF read). Requests are still
            // answered one after another (each server's loop), and what a pipelining client sends
            // ahead waits, undecoded, in `HTTPIntake`. No error handler: `HTTPMeter` answers what
            // the decoder refuses, once.
            position: .last, withPipeliningAssistance: false, withServerUpgrade: nil, withErrorHandling: false,
            withOutboundHeaderValidation: true, withEncoderConfiguration: Self.encoder,
            withDecoderLimitConfiguration: HTTPLimits.decoder)
        try pipeline.addHandler(HTTPMeter(state))
    }

    /// Serves until cancelled: each admitted connection, wrapped, then reading, in its own child task.
    package func run(_ serve: @escaping @Sendable (Connection, Admission.Ticket) async -> Void) async {
        try? await channel.executeThenClose { connections in
            try await withThrowingDiscardingTaskGroup { group in
                for try await admitted in connections {
                    guard let ticket = admitted.ticket else { continue }
                    let connection = admitted.channel
                    group.addTask {
                        // Wrapped, then reading: nothing arrives before the wrapper is there to take it.
                        guard let wrapped = try? await connection.eventLoop.submit({
                            let wrapped = try Connection(wrappingChannelSynchronously: connection)
                            try connection.syncOptions?.setOption(.autoRead, value: true)
                            return wrapped
                        }).get() else {
                            connection.close(promise: nil)
                            return
                        }
                        await serve(wrapped, ticket)
                    }
                }
            }
        }
    }
}
