import NIOCore
import NIOPosix
import NearbyBase
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LocalSend's discovery sockets: UDP on 0.0.0.0:53317, joined to 224.0.0.167 on every IPv4
/// interface that takes multicast (the loopback alone when there is no other), and — as the
/// official app does from 1.18 — UDP on [::]:53317 (IPv6 only), joined to ff12::fd3a:e420 on every
/// interface with an IPv6 address (by interface index; none when the system has no IPv6). One
/// sender per interface and family, so an announcement leaves on each of them, not only on the
/// default route's. Datagrams larger than `LocalSendLimits.datagramBytes` are dropped unread; what
/// waits for the reader, from both sockets, is bounded (the newest `queued`, older ones dropped).
package final class MulticastLink: Sendable {
    package struct Datagram: Sendable {
        package var bytes: [UInt8]
        package var host: String
        package var interface: String?
    }

    package struct Joined: Sendable, Equatable {
        package var interface: String
        /// This host's address there (IPv4), or the interface's IPv6 address (zoned).
        package var address: String
        /// The group joined there.
        package var group: String
    }

    /// Where announcements leave: a socket sending on one interface, and the group it sends to.
    struct Sender: Sendable {
        let channel: any Channel
        let group: SocketAddress
    }

    package let datagrams: AsyncStream<Datagram>
    package let joined: [Joined]
    private let listeners: [any Channel]
    private let senders: [Sender]
    static let queued = 512

    private init(datagrams: AsyncStream<Datagram>, joined: [Joined], listeners: [any Channel], senders: [Sender]) {
        self.datagrams = datagrams
        self.joined = joined
        self.listeners = listeners
        self.senders = senders
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

    /// Binds, joins and starts listening. `port` is LocalSend's (53317), other values for tests;
    /// `group6` nil: IPv4 only.
    package static func open(
        port: Int = LocalSendDefaults.port, group: String = LocalSendDefaults.multicastGroup,
        group6: String? = LocalSendDefaults.multicastGroupIPv6
    ) async throws(NearbyError) -> MulticastLink {
        let loop = MultiThreadedEventLoopGroup.singleton
        let (stream, continuation) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(queued))
        let names = Dictionary(
            ((try? System.enumerateDevices()) ?? []).map { ($0.interfaceIndex, $0.name) }, uniquingKeysWith: { first, _ in first })
        do {
            let groupAddress = try SocketAddress(ipAddress: group, port: port)
            let listener = try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
                .channelOption(.receivePacketInfo, value: true)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: LocalSendLimits.datagramBytes + 1))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Receiver(continuation: continuation, names: names, ends: true))
                    }
                }
                .bind(host: "0.0.0.0", port: port).get()
            var joined: [Joined] = []
            var senders: [Sender] = []
            for device in interfaces() {
                guard let address = device.address, let ip = address.ipAddress,
                      let multicast = listener as? any MulticastChannel else { continue }
                do {
                    try await multicast.joinGroup(groupAddress, device: device).get()
                } catch {
                    continue
                }
                joined.append(Joined(interface: device.name, address: ip, group: group))
                if let sender = try? await DatagramBootstrap(group: loop).bind(host: ip, port: 0).get() {
                    if case let .v4(v4)? = device.address, let options = sender as? any SocketOptionProvider {
                        _ = try? await options.setIPMulticastIF(v4.address.sin_addr).get()
                        _ = try? await options.setIPMulticastTTL(1).get()
                    }
                    senders.append(Sender(channel: sender, group: groupAddress))
                }
            }
            var listeners = [listener]
            if let group6, let six = await openIPv6(port: port, group: group6, continuation: continuation, names: names) {
                listeners.append(six.listener)
                joined += six.joined
                senders += six.senders
            }
            continuation.onTermination = { [listeners] _ in for listener in listeners { listener.close(promise: nil) } }
            return MulticastLink(datagrams: stream, joined: joined, listeners: listeners, senders: senders)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            continuation.finish()
            throw .listenFailed("cannot open LocalSend's discovery socket: UDP port \(port) is taken by a program that does not share it (SO_REUSEADDR)")
        } catch {
            continuation.finish()
            throw .listenFailed("cannot open LocalSend's discovery socket (group \(group)): \(ErrorWords.listening(error, port: port, transport: "UDP"))")
        }
    }

    /// Sends `bytes` to the group on every joined interface, in each family.
    package func announce(_ bytes: [UInt8]) {
        for sender in senders {
            let buffer = sender.channel.allocator.buffer(bytes: bytes)
            sender.channel.writeAndFlush(AddressedEnvelope(remoteAddress: sender.group, data: buffer), promise: nil)
        }
    }

    package func close() {
        for listener in listeners { listener.close(promise: nil) }
        for sender in senders { sender.channel.close(promise: nil) }
    }

    final class Receiver: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let continuation: AsyncStream<Datagram>.Continuation
        let names: [Int: String]
        /// Whether this socket closing ends the stream (the IPv4 one, always there).
        let ends: Bool

        init(continuation: AsyncStream<Datagram>.Continuation, names: [Int: String], ends: Bool) {
            self.continuation = continuation
            self.names = names
            self.ends = ends
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = Self.unwrapInboundIn(data)
            // A datagram that filled the buffer was larger than a device's announcement may be.
            guard envelope.data.readableBytes <= LocalSendLimits.datagramBytes,
                  let ip = envelope.remoteAddress.ipAddress else { return }
            var host = ip
            var scope = 0
            if case let .v6(v6) = envelope.remoteAddress {
                // A link-local sender is reachable only through the interface it was heard on.
                scope = Int(v6.address.sin6_scope_id)
                host = ScopedAddress.text(ip, scope: v6.address.sin6_scope_id) { [names] in names[Int($0)] }
            }
            let interface = envelope.metadata?.packetInfo.flatMap { names[$0.interfaceIndex] } ?? names[scope]
            continuation.yield(Datagram(bytes: Array(envelope.data.readableBytesView), host: host, interface: interface))
        }

        func channelInactive(context: ChannelHandlerContext) {
            if ends { continuation.finish() }
        }
    }
}
