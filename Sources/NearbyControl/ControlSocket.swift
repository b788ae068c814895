import Foundation
import NIOCore
import NIOPosix
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one control socket of every kind of node (nearby's own, LocalSend's): a Unix socket in the
/// run directory, created under umask 0077 and chmod 0600, served one connection per client while
/// the client stays. At most `maxClients` are served at once; one more is handed to `refuse`, which
/// may tell it so in the node's own words before it is closed. What a connection carries (its
/// request and its answer) is the node's: this only binds, admits and counts.
package enum ControlSocket {
    /// Clients served at once: 16, or `NEARBY_CONTROL_CLIENTS` (for tests).
    package static let maxClients = ProcessInfo.processInfo.environment["NEARBY_CONTROL_CLIENTS"].flatMap(Int.init).map { max($0, 1) } ?? 16

    /// Serves `address` until the calling task is cancelled; `ready` once it listens. The socket
    /// file is removed when serving ends.
    package static func serve(
        _ address: NodeAddress,
        receiveBuffer: AdaptiveRecvByteBufferAllocator = .init(),
        active: ActiveRequests = ActiveRequests(),
        ready: @Sendable () -> Void = {},
        refuse: @escaping @Sendable (ControlConnection) async -> Void = { _ in },
        connection serve: @escaping @Sendable (ControlConnection) async -> Void
    ) async throws(NearbyError) {
        try RunDirectory.prepare(address.directory)
        let server: NIOAsyncChannel<ControlConnection, Never>
        do {
            // Created under umask 0077: the socket is never reachable by others, not even before chmod.
            server = try await RunDirectory.withPrivateUmask {
                try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    // A client may end its bytes (EOF: send --lines) and still read its answer.
                    .childChannelOption(.allowRemoteHalfClosure, value: true)
                    .childChannelOption(.recvAllocator, value: receiveBuffer)
                    .bind(unixDomainSocketPath: address.socket, cleanupExistingSocketFile: true) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // Before the async wrapper: it sees the client's end whoever reads.
                            let gone = OneShot<Void>()
                            try channel.pipeline.syncOperations.addHandler(ClientGoneWatcher(gone))
                            return ControlConnection(
                                channel: try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                                    wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)),
                                gone: gone)
                        }
                    }
            }
            chmod(address.socket, 0o600)
        } catch {
            throw .ioFailure(path: address.socket, reason: "cannot listen: \(ErrorWords.describe(error))")
        }
        defer { unlink(address.socket) }
        ready()
        _ = try? await server.executeThenClose { clients in
            try await withThrowingDiscardingTaskGroup { group in
                for try await client in clients {
                    guard active.count < maxClients else {
                        group.addTask {
                            await refuse(client)
                            try? await client.channel.channel.close()
                        }
                        continue
                    }
                    active.begin()
                    group.addTask {
                        await serve(client)
                        active.end()
                    }
                }
            }
        }
    }
}
