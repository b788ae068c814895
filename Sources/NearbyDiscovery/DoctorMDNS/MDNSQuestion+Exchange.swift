import Foundation
import NIOCore
import NIOPosix
import NearbyDNS
import NearbyBase

/// The one exchange every direct question of doctor's makes: a socket of its own (never 5353),
/// each question sent a few times to its address, the answers read up to a cap, those the caller's
/// filter does not want dropped. The repeats are a child task of the same group as the read, so
/// they end with it.
extension MDNSQuestion {
    /// One datagram to send (a question's wire bytes) and where.
    struct Send: Sendable {
        var to: SocketAddress
        var wire: [UInt8]
    }

    /// What the exchange does after an answer the filter was given.
    enum Reading: Sendable {
        /// Go on reading until the wait ends.
        case more
        /// Read on for `grace` more (other responders' answers to the same question), then stop.
        case settle
        /// Stop now.
        case done
    }

    /// Sends `sends` `repeats` times, `wait / repeats` apart (one question lost on a busy link is
    /// not the peer's absence), and reads for `wait` at most: at most `maxAnswers` datagrams (each
    /// at most `maxAnswerBytes`), every DNS response from UDP `port` handed to `take` with its
    /// source address. `multicastVia`: this host's address the multicast ones leave by (nil: none);
    /// `sends` is told whether that could be set. Returns at once, having sent nothing, when `sends`
    /// is empty. Throws when the socket cannot be opened, when every datagram of a round could not
    /// be sent, or `CancellationError`. `take` is called from one task at a time.
    static func exchange(
        v6: Bool, multicastVia: String?, port: Int, wait: Duration, repeats: Int, grace: Duration = .zero,
        sends: (_ multicastReady: Bool) -> [Send], take: @escaping @Sendable (DNSMessage, String) -> Reading
    ) async throws {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: maxAnswerBytes))
            .bind(host: v6 ? "::" : "0.0.0.0", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(wrappingChannelSynchronously: channel)
                }
            }
        let ready = multicastVia == nil ? false : await multicastOptions(channel.channel, via: multicastVia, v6: v6)
        let datagrams = sends(ready)
        guard !datagrams.isEmpty, repeats > 0 else {
            try? await channel.channel.close()
            return
        }
        let (settled, settle) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        try await channel.executeThenClose { inbound, outbound in
            // Each child says whether its end ends the exchange: the repeats' end does not.
            try await withThrowingTaskGroup(of: Bool.self) { tasks in
                tasks.addTask {
                    try await Task.sleep(for: wait)
                    return true
                }
                tasks.addTask {
                    for await _ in settled {
                        try await Task.sleep(for: grace)
                        return true
                    }
                    return false
                }
                tasks.addTask {
                    for round in 0..<repeats {
                        if round > 0 { try await Task.sleep(for: wait / repeats) }
                        var failure: (any Error)?
                        var sent = 0
                        for datagram in datagrams {
                            do {
                                try await outbound.write(AddressedEnvelope(remoteAddress: datagram.to, data: ByteBuffer(bytes: datagram.wire)))
                                sent += 1
                            } catch is CancellationError {
                                throw CancellationError()
                            } catch {
                                failure = failure ?? error
                            }
                        }
                        if sent == 0, let failure { throw failure }
                    }
                    return false
                }
                tasks.addTask {
                    var count = 0
                    for try await envelope in inbound {
                        count += 1
                        guard count <= maxAnswers else { return true }
                        guard envelope.remoteAddress.port == port, let source = envelope.remoteAddress.ipAddress,
                              let message = try? DNSMessage.decode(Array(envelope.data.readableBytesView)), message.isResponse
                        else { continue }
                        switch take(message, source) {
                        case .more: continue
                        case .settle: settle.yield()
                        case .done: return true
                        }
                    }
                    return true
                }
                defer {
                    settle.finish()
                    tasks.cancelAll()
                }
                while let ended = try await tasks.next() {
                    if ended { return }
                }
            }
        }
    }
}
