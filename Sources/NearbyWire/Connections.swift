import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NearbyBase

/// Opening connections and listening for them. Each connection negotiates on its own (a slow
/// or silent client never holds up the next one) and is handed over once its preamble is done.
package enum Connections {
    /// Reads of up to 256 KiB (NIO's default stops at 64 KiB): a bulk transfer costs a quarter of
    /// the read calls and TLS unwraps. For the control socket's clients (links that carry files or
    /// streams read with `bulkReads`, within `MemoryBudget.bulkReads`).
    package static let receiveBuffer = AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 65536, maximum: 256 << 10)

    /// How a connection reads: the buffer it reads into, and how many reads it makes in a row.
    /// NIO keeps up to `perCycle` buffers per connection for as long as it lives, and TLS gathers
    /// a whole cycle's plaintext in one buffer of its own that never shrinks: 4 × 256 KiB reads
    /// cost a connection about 2 MiB for good (0.7 MB measured per connection that sent one
    /// burst before its handshake ended).
    struct Reads: Sendable {
        let allocator: any RecvByteBufferAllocator
        let perCycle: UInt
    }

    /// Before the session: one read of 16 KiB (a TLS record, a handshake frame) at a time.
    static let handshakeReads = Reads(allocator: FixedSizeRecvByteBufferAllocator(capacity: 16 << 10), perCycle: 1)
    /// In a session: one read of up to 32 KiB at a time (two hundred links flooding messages hold
    /// 6 MiB of read buffers, not 50).
    static let sessionReads = Reads(
        allocator: AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 16 << 10, maximum: 32 << 10), perCycle: 1)
    /// A link carrying a file or a stream, with room in `MemoryBudget.bulkReads`: 2 reads of up to
    /// 512 KiB, the same 1 MiB a wake-up as 4 of 256 KiB, and TLS's buffer of as much. A receiver's
    /// reads of 256 KiB came back full (253 KiB on average, strace of a 1 GiB stream): the socket
    /// held more, and each read is a syscall and a pass through TLS.
    static let bulkReads = Reads(
        allocator: AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 256 << 10, maximum: 512 << 10), perCycle: 2)

    static func install(
        on channel: any Channel, role: PreambleHandler.Role, preference: EncryptionPreference, tls: NIOSSLContext
    ) -> EventLoopFuture<Negotiated> {
        let promise = channel.eventLoop.makePromise(of: Negotiated.self)
        do {
            try channel.pipeline.syncOperations.addHandler(
                PreambleHandler(role: role, preference: preference, tls: tls, promise: promise))
        } catch {
            promise.fail(error)
        }
        return promise.futureResult
    }

    /// Listens on every address (IPv6 and IPv4, or IPv4 alone where the host has no IPv6) and calls
    /// `handle` with each negotiated connection. A connection over the process's `budget`, or over
    /// the `admission`'s caps on links that are not sessions, is closed at once.
    package static func listen(
        port: Int, preference: EncryptionPreference, tls: NIOSSLContext, admission: Admission = Admission(),
        budget: ResourceBudget = .shared, handle: @escaping @Sendable (Negotiated) -> Void
    ) async throws(NearbyError) -> any Channel {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.recvAllocator, value: handshakeReads.allocator)
            .childChannelOption(.maxMessagesPerRead, value: handshakeReads.perCycle)
            .childChannelInitializer { channel in
                guard let ticket = admission.admit(channel, budget: budget) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.inappropriateOperationForState)
                }
                install(on: channel, role: .server, preference: preference, tls: tls).whenSuccess { negotiated in
                    guard case var .frames(frames) = negotiated else { return handle(negotiated) }
                    frames.admission = ticket
                    handle(.frames(frames))
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        var failure = "unknown error"
        for host in ["::", "0.0.0.0"] {
            do {
                return try await bootstrap.bind(host: host, port: port).get()
            } catch {
                failure = ErrorWords.listening(error, port: port)
            }
        }
        throw .listenFailed("cannot listen for sessions: \(failure)")
    }

    /// Connects and runs the preamble; cancelling the calling task ends the wait at once. The
    /// connection takes a place in the process's `budget` until it closes.
    /// How long a TCP connection may take to be made: 10 s, or $NEARBY_CONNECT_TIMEOUT_MS (a test knob).
    package static let connectTimeout = ProcessInfo.processInfo.environment["NEARBY_CONNECT_TIMEOUT_MS"]
        .flatMap(Int64.init).map { TimeAmount.milliseconds(max($0, 1)) } ?? .seconds(10)

    package static func connect(
        host: String, port: Int, preference: EncryptionPreference, tls: NIOSSLContext, timeout: TimeAmount = connectTimeout,
        budget: ResourceBudget = .shared
    ) async throws -> Negotiated {
        guard budget.takeConnection() else {
            throw NearbyError.connectionFailed("cannot connect to \(host):\(port): \(budget.limits.descriptors) connections and files are open, the most this process keeps")
        }
        let negotiated = Locked<EventLoopFuture<Negotiated>?>(nil)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.recvAllocator, value: handshakeReads.allocator)
                .channelOption(.maxMessagesPerRead, value: handshakeReads.perCycle)
                .channelInitializer { channel in
                    let future = install(on: channel, role: .client, preference: preference, tls: tls)
                    negotiated.withLock { $0 = future }
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .connect(host: host, port: port).value { $0.close(promise: nil) }
        } catch {
            budget.giveConnection()
            throw error
        }
        // Given back once, by the connection that won (Happy Eyeballs may have tried several).
        channel.closeFuture.whenComplete { _ in budget.giveConnection() }
        guard let future = negotiated.withLock({ $0 }) else {
            channel.close(promise: nil)
            throw NearbyError.connectionFailed("the connection to \(host):\(port) was not set up")
        }
        do {
            return try await future.value { negotiated in
                if case let .frames(frames) = negotiated { frames.channel.channel.close(promise: nil) }
            }
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }
}
