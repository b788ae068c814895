import NIOCore
import NIOPosix
import NearbyDNS
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

/// A hostile UDP "server" on loopback: to each query it sends a reply with another ID, one with
/// another question, and finally the right one with TC set.
private final class TrickyUDPServer: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let query = try? DNSMessage.decode(Array(envelope.data.readableBytesView)) else { return }
        var wrongID = query
        wrongID.isResponse = true
        wrongID.id &+= 1
        wrongID.answers = [DNSRecord(name: query.questions[0].name, type: .ptr, ttl: 1, data: .ptr(.root))]
        var wrongQuestion = wrongID
        wrongQuestion.id = query.id
        wrongQuestion.questions = [DNSQuestion(name: .root, type: .ptr)]
        var truncated = query
        truncated.isResponse = true
        truncated.truncated = true
        for reply in [wrongID, wrongQuestion, truncated] {
            guard let bytes = try? reply.encode() else { continue }
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: bytes))), promise: nil)
        }
        context.flush()
    }
}

/// The TCP side: answers each framed query with one PTR record.
private final class AnsweringTCPServer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var buffer = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        buffer.writeBuffer(&chunk)
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self), buffer.readableBytes >= 2 + Int(length) else { return }
        buffer.moveReaderIndex(forwardBy: 2)
        guard let bytes = buffer.readBytes(length: Int(length)), var reply = try? DNSMessage.decode(bytes) else { return }
        reply.isResponse = true
        reply.answers = [DNSRecord(name: reply.questions[0].name, type: .ptr, ttl: 1, data: .ptr(reply.questions[0].name))]
        guard let wire = try? reply.encode() else { return }
        var out = ByteBuffer()
        out.writeInteger(UInt16(wire.count))
        out.writeBytes(wire)
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }
}

@Suite struct DNSTransportTests {
    @Test func onlyTheMatchingReplyCountsAndTruncationGoesToTCP() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let tcp = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(AnsweringTCPServer()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(tcp.localAddress?.port)
        let udp = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(TrickyUDPServer()) }
            }
            .bind(host: "127.0.0.1", port: port).get()
        defer {
            tcp.close(promise: nil)
            udp.close(promise: nil)
        }
        let name = try DNSName("_nearby._tcp.example.test")
        let query = DNSMessage.query(id: DNSTransport.randomID(), name: name, type: .ptr)
        // A generous deadline: the whole suite runs in parallel, some tests moving gigabytes.
        let reply = try await DNSTransport(server: DNSServerAddress(host: "127.0.0.1", port: port), deadline: .seconds(20))
            .exchange(query, wire: try query.encode())
        #expect(reply.id == query.id && !reply.truncated)
        #expect(reply.answers == [DNSRecord(name: name, type: .ptr, ttl: 1, data: .ptr(name))])
    }

    @Test func aServerThatNeverAnswersIsUnreachableAtTheDeadline() async throws {
        // A UDP socket that reads and says nothing.
        let silent = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        defer { silent.close(promise: nil) }
        let port = try #require(silent.localAddress?.port)
        let query = DNSMessage.query(id: 1, name: try DNSName("example.test"), type: .soa)
        let started = ContinuousClock.now
        await #expect(throws: NearbyError.self) {
            try await DNSTransport(server: DNSServerAddress(host: "127.0.0.1", port: port), deadline: .milliseconds(400))
                .exchange(query, wire: try query.encode())
        }
        // The deadline ends it, not a hang: bounded generously, as a loaded machine took 87 s here
        // (a load of 36 on two cores, two busy loops beside the whole suite).
        #expect(ContinuousClock.now - started < .seconds(TestNodes.patience))
    }
}
