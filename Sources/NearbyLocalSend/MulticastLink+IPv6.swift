import NIOCore
import NIOPosix
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension MulticastLink {
    /// The IPv6 side, as the official app 1.18 opens it (`core/src/multicast/socket.rs`): one
    /// socket on [::]:`port`, IPv6 only (so it takes nothing from the IPv4 socket on the same
    /// port), joined to `group` by interface index on every interface other than the loopback
    /// with an IPv6 address and multicast; a sender per interface (`IPV6_MULTICAST_IF`, one hop).
    struct IPv6Side {
        let listener: any Channel
        let joined: [Joined]
        let senders: [Sender]
    }

    /// The interfaces to join the IPv6 group on, one per interface (membership is per interface,
    /// not per address); its link-local address first when it has several.
    static func interfaces6() -> [NIONetworkDevice] {
        let devices = ((try? System.enumerateDevices()) ?? []).filter {
            if case .v6? = $0.address { return $0.multicastSupported && !$0.name.hasPrefix("lo") } else { return false }
        }
        var chosen: [String: NIONetworkDevice] = [:]
        var order: [String] = []
        for device in devices {
            guard let previous = chosen[device.name] else {
                chosen[device.name] = device
                order.append(device.name)
                continue
            }
            if !ScopedAddress.isLinkLocal(previous.address?.ipAddress ?? ""), ScopedAddress.isLinkLocal(device.address?.ipAddress ?? "") {
                chosen[device.name] = device
            }
        }
        return order.compactMap { chosen[$0] }
    }

    /// Nil when IPv6 cannot be had here (no IPv6 in the kernel, no interface with it, the port
    /// taken): discovery then goes on over IPv4 alone.
    static func openIPv6(
        port: Int, group: String, continuation: AsyncStream<Datagram>.Continuation, names: [Int: String]
    ) async -> IPv6Side? {
        let devices = interfaces6()
        guard !devices.isEmpty, let groupAddress = try? SocketAddress(ipAddress: group, port: port) else { return nil }
        let loop = MultiThreadedEventLoopGroup.singleton
        let v6only = ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only)
        let bootstrap = DatagramBootstrap(group: loop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelOption(v6only, value: 1)
            .channelOption(.receivePacketInfo, value: true)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: LocalSendLimits.datagramBytes + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Receiver(continuation: continuation, names: names, ends: false))
                }
            }
        guard let listener = try? await bootstrap.bind(host: "::", port: port).get() else { return nil }
        var joined: [Joined] = []
        var senders: [Sender] = []
        for device in devices {
            guard let multicast = listener as? any MulticastChannel,
                  (try? await multicast.joinGroup(groupAddress, device: device).get()) != nil
            else { continue }
            let index = UInt32(clamping: device.interfaceIndex)
            let address = device.address?.ipAddress.map { ScopedAddress.text($0, scope: index) { _ in device.name } } ?? ""
            joined.append(Joined(interface: device.name, address: address, group: group))
            guard let sender = try? await DatagramBootstrap(group: loop).channelOption(v6only, value: 1).bind(host: "::", port: 0).get() else { continue }
            if let options = sender as? any SocketOptionProvider {
                _ = try? await options.setIPv6MulticastIF(CUnsignedInt(index)).get()
                _ = try? await options.setIPv6MulticastHops(1).get()
            }
            senders.append(Sender(channel: sender, group: groupAddress))
        }
        guard !joined.isEmpty else {
            listener.close(promise: nil)
            return nil
        }
        return IPv6Side(listener: listener, joined: joined, senders: senders)
    }
}
