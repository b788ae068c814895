import NIOCore
import NIOPosix

/// The TCP port a node advertises. Sessions arrive with the sessions work; until then a connection
/// is accepted and closed at once, so a curious peer gets a clean close rather than a hang.
public final class Listener: Sendable {
    private let channel: any Channel
    public let port: Int

    private init(channel: any Channel, port: Int) {
        self.channel = channel
        self.port = port
    }

    /// Binds to every address (IPv6 and IPv4 where the host has IPv6, IPv4 alone where not).
    public static func bind(port: Int = 0) async throws(NearbyError) -> Listener {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in channel.close() }
        var lastError: (any Error)?
        for host in ["::", "0.0.0.0"] {
            do {
                let channel = try await bootstrap.bind(host: host, port: port).get()
                guard let bound = channel.localAddress?.port else {
                    try? await channel.close()
                    throw NearbyError.listenFailed("the socket has no port")
                }
                return Listener(channel: channel, port: bound)
            } catch {
                lastError = error
            }
        }
        throw .listenFailed(String(describing: lastError.map { "\($0)" } ?? "unknown error"))
    }

    public func close() async {
        try? await channel.close()
    }
}
