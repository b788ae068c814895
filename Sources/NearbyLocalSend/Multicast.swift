import NIOCore
import NIOPosix
import NearbyCore
import NearbyBase
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LocalSend's discovery socket: UDP on 0.0.0.0:53317, joined to 224.0.0.167 on every IPv4
/// interface that takes multicast (the loopback alone when there is no other), with one sender per
/// interface so an announcement leaves on each of them, not only on the default route's.
/// Datagrams larger than `LocalSendLimits.datagramBytes` are dropped unread; what waits for the
/// reader is bounded (the newest `queued`, older ones dropped).
package final class MulticastLink: Sendable {
    package struct Datagram: Sendable {
        package var bytes: [UInt8]
        package var host: String
        package var interface: String?
    }

    package struct Joined: Sendable, Equatable {
        package var interface: String
        package var address: String
    }

    package let datagrams: AsyncStream<Datagram>
    package let joined: [Joined]
    private let listener: any Channel
    private let senders: [any Channel]
    private let group: SocketAddress
    static let queued = 512

    private init(datagrams: AsyncStream<Datagram>, joined: [Joined], listener: any Channel, senders: [any Channel], group: SocketAddress) {
        self.datagrams = datagrams
        self.joined = joined
        self.listener = listener
        self.senders = senders
        self.group = group
    }

    /// The IPv4 interfaces to join on: up, multicast-capable, with an address; the loopback only
    /// when nothing else is there.
    static func interfaces() -> [NIONetworkDevice] {
        let devices = ((try? System.enumerateDevices()) ?? []).filter {
            if case .v4? = $0.address { return $0.multicastSupported || $0.name.hasPrefix("lo") } else { return false }
        }
        let outside = devices.filter { !$0.name.hasPrefix("lo") }
        var seen = Set<String>()
        return (outside.isEmpty ? devices : outside).filter { seen.insert($0.name).inserted }
    }

    /// Binds, joins and starts listening. `port` is LocalSend's (53317), other values for tests.
    package static func open(port: Int = LocalSendDefaults.port, group: String = LocalSendDefaults.multicastGroup) async throws(NearbyError) -> MulticastLink {
        let loop = MultiThreadedEventLoopGroup.singleton
        let (stream, continuation) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(queued))
        let names = Dictionary(interfaces().map { ($0.interfaceIndex, $0.name) }, uniquingKeysWith: { first, _ in first })
        do {
            let groupAddress = try SocketAddress(ipAddress: group, port: port)
            let listener = try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
                .channelOption(.receivePacketInfo, value: true)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: LocalSendLimits.datagramBytes + 1))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Receiver(continuation: continuation, names: names))
                    }
                }
                .bind(host: "0.0.0.0", port: port).get()
            var joined: [Joined] = []
            var senders: [any Channel] = []
            for device in interfaces() {
                guard let address = device.address, let ip = address.ipAddress,
                      let multicast = listener as? any MulticastChannel else { continue }
                do {
                    try await multicast.joinGroup(groupAddress, device: device).get()
                } catch {
                    continue
                }
                joined.append(Joined(interface: device.name, address: ip))
                if let sender = try? await DatagramBootstrap(group: loop).bind(host: ip, port: 0).get() {
                    if case let .v4(v4)? = device.address, let options = sender as? any SocketOptionProvider {
                        _ = try? await options.setIPMulticastIF(v4.address.sin_addr).get()
                        _ = try? await options.setIPMulticastTTL(1).get()
                    }
                    senders.append(sender)
                }
            }
            continuation.onTermination = { _ in listener.close(promise: nil) }
            return MulticastLink(datagrams: stream, joined: joined, listener: listener, senders: senders, group: groupAddress)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            continuation.finish()
            throw .listenFailed("cannot open LocalSend's discovery socket: UDP port \(port) is taken by a program that does not share it (SO_REUSEADDR)")
        } catch {
            continuation.finish()
            throw .listenFailed("cannot open LocalSend's discovery socket (group \(group)): \(ErrorWords.listening(error, port: port, transport: "UDP"))")
        }
    }

    /// Sends `bytes` to the group on every joined interface.
    package func announce(_ bytes: [UInt8]) {
        for sender in senders {
            let buffer = sender.allocator.buffer(bytes: bytes)
            sender.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: buffer), promise: nil)
        }
    }

    package func close() {
        listener.close(promise: nil)
        for sender in senders { sender.close(promise: nil) }
    }

    private final class Receiver: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let continuation: AsyncStream<Datagram>.Continuation
        let names: [Int: String]

        init(continuation: AsyncStream<Datagram>.Continuation, names: [Int: String]) {
            self.continuation = continuation
            self.names = names
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = Self.unwrapInboundIn(data)
            // A datagram that filled the buffer was larger than a device's announcement may be.
            guard envelope.data.readableBytes <= LocalSendLimits.datagramBytes,
                  let host = envelope.remoteAddress.ipAddress else { return }
            let interface = envelope.metadata?.packetInfo.flatMap { names[$0.interfaceIndex] }
            continuation.yield(Datagram(bytes: Array(envelope.data.readableBytesView), host: host, interface: interface))
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
        }
    }
}
