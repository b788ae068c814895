import Foundation
import NIOCore
import NIOPosix
import NearbyDNS
import NearbyBase

/// Sends one DNS message to one server and returns the reply that answers it: UDP from a fresh
/// socket (a random source port, the kernel's) with a random ID, retried within the deadline;
/// TCP when the reply is truncated. Replies from elsewhere, with another ID or another question,
/// or that do not parse are ignored; the wait goes on until the deadline.
struct DNSTransport: Sendable {
    package let server: DNSServerAddress
    /// The whole exchange, all tries together (`NEARBY_DNS_TIMEOUT` seconds, default 3).
    package let deadline: Duration
    package static let tries = 3
    /// Messages on one TCP connection that answer nothing we asked before the exchange gives up.
    package static let maxStrayMessages = 8
    /// The UDP payload we announce (EDNS0, RFC 6891) and the most we read of one datagram: the
    /// size DNS Flag Day 2020 settled on, below any path's MTU. Larger answers come over TCP.
    package static let udpPayloadSize = 1232

    package init(server: DNSServerAddress, deadline: Duration = .seconds(3)) {
        self.server = server
        self.deadline = deadline
    }

    struct TimedOut: Error {}

    /// A random message ID from the system's generator.
    package static func randomID() -> UInt16 {
        var generator = SystemRandomNumberGenerator()
        return UInt16.random(in: 0...UInt16.max, using: &generator)
    }

    /// Exchanges `query`; `check` sees each candidate reply's bytes and may refuse it (a TSIG that
    /// does not verify) by returning false.
    package func exchange(
        _ query: DNSMessage, wire: [UInt8], check: @escaping @Sendable (DNSMessage, [UInt8]) -> Bool = { _, _ in true }
    ) async throws(NearbyError) -> DNSMessage {
        let address: SocketAddress
        do {
            address = try SocketAddress.makeAddressResolvingHost(server.host, port: server.port)
        } catch {
            throw .wideArea(.unreachable(server: server.description, reason: "cannot resolve \(server.host)"))
        }
        do {
            // One deadline for the whole exchange, UDP and TCP together.
            return try await Self.within(deadline) {
                let reply = try await udp(query, wire: wire, to: address, check: check)
                guard reply.truncated else { return reply }
                return try await tcp(query, wire: wire, to: address, check: check)
            }
        } catch is TimedOut {
            throw .wideArea(.unreachable(server: server.description, reason: "no answer within \(deadline)"))
        } catch let error as NearbyError {
            throw error
        } catch is CancellationError {
            throw .cancelled("DNS query")
        } catch {
            throw .wideArea(.unreachable(server: server.description, reason: ErrorWords.describe(error)))
        }
    }

    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        guard let value = try await firstThrowingResult(within: limit, body) else { throw TimedOut() }
        return value
    }

    private func udp(
        _ query: DNSMessage, wire: [UInt8], to address: SocketAddress, check: @escaping @Sendable (DNSMessage, [UInt8]) -> Bool
    ) async throws -> DNSMessage {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.udpPayloadSize))
            .bind(host: address.protocol == .inet6 ? "::" : "0.0.0.0", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(wrappingChannelSynchronously: channel)
                }
            }
        let interval = deadline / Self.tries
        return try await channel.executeThenClose { inbound, outbound in
            // The resends are a child of the exchange: the first reply that matches ends both.
            try await withThrowingTaskGroup(of: DNSMessage?.self) { group in
                group.addTask {
                    for _ in 0..<Self.tries {
                        try await outbound.write(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: wire)))
                        try await Task.sleep(for: interval)
                    }
                    return nil
                }
                group.addTask {
                    for try await envelope in inbound {
                        guard envelope.remoteAddress == address else { continue }
                        let bytes = Array(envelope.data.readableBytesView)
                        guard let reply = try? DNSMessage.decode(bytes), DNSReplyMatch.matches(reply, query) else {
                            // A truncated reply may not parse past its header; still a valid "use TCP".
                            if let header = try? Self.truncatedHeader(bytes), header.id == query.id, header.truncated { return header }
                            continue
                        }
                        if reply.truncated || check(reply, bytes) { return reply }
                    }
                    throw TimedOut()
                }
                defer { group.cancelAll() }
                while let reply = try await group.next() {
                    if let reply { return reply }
                }
                throw TimedOut()
            }
        }
    }

    /// The header of a reply with TC set, when the rest did not parse.
    static func truncatedHeader(_ bytes: [UInt8]) throws -> DNSMessage {
        guard bytes.count >= 12 else { throw DNSError.malformed("short") }
        var header = Array(bytes.prefix(12))
        for index in 4..<12 { header[index] = 0 }
        return try DNSMessage.decode(header)
    }

    private func tcp(
        _ query: DNSMessage, wire: [UInt8], to address: SocketAddress, check: @escaping @Sendable (DNSMessage, [UInt8]) -> Bool
    ) async throws -> DNSMessage {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(deadline / .milliseconds(1))))
            .connect(to: address) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var framed = ByteBuffer()
            framed.writeInteger(UInt16(wire.count))
            framed.writeBytes(wire)
            try await outbound.write(framed)
            // One message at a time, at most 65,537 bytes held; what answers nothing is dropped.
            var framer = DNSStreamFramer()
            for try await chunk in inbound {
                var rest = ArraySlice(chunk.readableBytesView)
                while let bytes = framer.next(from: &rest) {
                    if let reply = try? DNSMessage.decode(bytes), DNSReplyMatch.matches(reply, query), check(reply, bytes) {
                        return reply
                    }
                    guard framer.messages < Self.maxStrayMessages else {
                        throw NearbyError.wideArea(.unreachable(
                            server: server.description, reason: "over TCP it sent \(framer.messages) messages that answer nothing we asked"))
                    }
                }
            }
            throw NearbyError.wideArea(.unreachable(server: server.description, reason: "the TCP connection closed without an answer"))
        }
    }
}
