import Foundation
import NIOCore
import NIOEmbedded
import NIOSSL
import Testing
@testable import NearbyCore
@testable import NearbyIdentity
@testable import NearbyWire
import NearbyBase

/// The pipeline handlers on `EmbeddedChannel`s: frames split and merged at every byte boundary, and
/// the plaintext preamble handing the connection over to TLS and the frame codec.
@Suite struct PipelineTests {
    private func encoded(_ frames: [Frame]) -> ByteBuffer {
        var out = ByteBuffer()
        for frame in frames { FrameEncoder.write(frame, into: &out) }
        return out
    }

    /// Consecutive data frames on one channel as one: what a receiver of the channel's bytes sees.
    private func joined(_ frames: [Frame]) -> [Frame] {
        var out: [Frame] = []
        for frame in frames {
            if frame.kind == .data, var last = out.last, last.kind == .data, last.channel == frame.channel {
                var payload = frame.payload
                last.payload.writeBuffer(&payload)
                out[out.count - 1] = last
            } else {
                out.append(frame)
            }
        }
        return out
    }

    @Test func framesSplitAtEveryByteBoundaryDecodeTheSame() throws {
        let frames = [
            Frame(kind: .message, payload: ByteBuffer(string: "hello")), Frame(kind: .ping),
            Frame(kind: .data, channel: 3, payload: ByteBuffer(repeating: 9, count: 300)),
            Frame(kind: .window, channel: 3, payload: ByteBuffer(integer: UInt32(7))),
            Frame(kind: .data, channel: 5, payload: ByteBuffer(repeating: 4, count: 40)),
        ]
        let all = encoded(frames)
        for cut in 0...all.readableBytes {
            for second in stride(from: cut, through: all.readableBytes, by: 37) {
                let channel = EmbeddedChannel(handler: FrameSplitter())
                defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
                for (start, end) in [(0, cut), (cut, second), (second, all.readableBytes)] {
                    if let part = all.getSlice(at: start, length: end - start) { try channel.writeInbound(part) }
                }
                var decoded: [Frame] = []
                while let frame = try channel.readInbound(as: Frame.self) { decoded.append(frame) }
                #expect(joined(decoded) == frames, "cuts at \(cut) and \(second)")
                #expect(decoded.allSatisfy { $0.kind != .data || $0.payload.readableBytes > 0 }, "no empty pieces")
                #expect(try channel.finish().isClean)
            }
        }
    }

    @Test func aDataFrameGoesUpAsItArrivesInMemoryOfItsOwn() throws {
        let payload = ByteBuffer(repeating: 1, count: 100_000)
        let all = encoded([Frame(kind: .data, channel: 9, payload: payload)])
        let channel = EmbeddedChannel(handler: FrameSplitter())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        var offset = 0
        var pieces: [Frame] = []
        let read = all.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) ..< UInt(bitPattern: $0.baseAddress) + UInt($0.count) }
        while offset < all.readableBytes {
            let count = min(16 << 10, all.readableBytes - offset)
            try channel.writeInbound(all.getSlice(at: offset, length: count) ?? ByteBuffer())
            offset += count
            // Each read's part is up before the next read arrives.
            while let frame = try channel.readInbound(as: Frame.self) {
                // Not a slice of the read: the layer below may fill its buffer again in place.
                #expect(!read.contains(frame.payload.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }))
                pieces.append(frame)
            }
            #expect(pieces.reduce(0) { $0 + $1.payload.readableBytes } == offset - Frame.headerSize)
        }
        #expect(pieces.count == 7)
        #expect(joined(pieces) == [Frame(kind: .data, channel: 9, payload: payload)])
    }

    @Test func anOversizedFrameIsRefusedWhateverTheSplitAndNothingFollows() throws {
        var header = ByteBuffer()
        header.writeInteger(Frame.Kind.data.rawValue)
        header.writeInteger(UInt32(1))
        header.writeInteger(UInt32(Frame.maxPayload + 1))
        let channel = EmbeddedChannel(handler: FrameSplitter())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        for index in 0..<(Frame.headerSize - 1) {
            try channel.writeInbound(header.getSlice(at: index, length: 1) ?? ByteBuffer())
        }
        #expect(throws: ProtocolViolation.frameTooLarge(Frame.maxPayload + 1)) {
            try channel.writeInbound(header.getSlice(at: Frame.headerSize - 1, length: 1) ?? ByteBuffer())
        }
        try channel.writeInbound(encoded([Frame(kind: .ping)]))
        #expect(try channel.readInbound(as: Frame.self) == nil)
    }

    /// What an embedded channel's future holds already, without waiting (waiting would hang).
    @Test func theWriteSideSendsBigPayloadsUncopiedAndJoinsSmallFrames() throws {
        let big = ByteBuffer(repeating: 7, count: WriteCoalescer.small * 3)
        let frames = [
            Frame(kind: .message, payload: ByteBuffer(string: "one")), Frame(kind: .ping),
            Frame(kind: .data, channel: 5, payload: big),
            Frame(kind: .message, payload: ByteBuffer(string: "two")),
        ]
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.pipeline.syncOperations.addHandlers([WriteCoalescer(), FrameWriter()])
        var written: [EventLoopFuture<Void>] = []
        for frame in frames { written.append(channel.write(frame)) }
        channel.flush()
        // The flush waits for the end of the loop's tick: nothing is out yet.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        var pieces: [ByteBuffer] = []
        while let piece = try channel.readOutbound(as: ByteBuffer.self) { pieces.append(piece) }
        // The two small frames and the big one's header joined; the payload as it was; the last frame.
        #expect(pieces.count == 3)
        #expect(pieces.count > 1 && pieces[1] == big)
        var all = ByteBuffer()
        for var piece in pieces { all.writeBuffer(&piece) }
        #expect(all == encoded(frames))
        for future in written { #expect(throws: Never.self) { try future.wait() } }
        #expect(try channel.finish().isClean)
    }

    @Test func flushesInOneTickLeaveAsOneWrite() throws {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.pipeline.syncOperations.addHandlers([WriteCoalescer(), FrameWriter()])
        let frames = (0..<100).map { Frame(kind: .message, payload: ByteBuffer(string: "message \($0)")) }
        var written: [EventLoopFuture<Void>] = []
        for frame in frames { written.append(channel.writeAndFlush(frame)) }
        channel.embeddedEventLoop.run()
        let first = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(first == encoded(frames))
        for future in written { #expect(throws: Never.self) { try future.wait() } }
        // A half-close sends what is waiting for the flush first.
        _ = channel.writeAndFlush(Frame(kind: .goodbye))
        channel.close(mode: .output, promise: nil)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == encoded([Frame(kind: .goodbye)]))
        _ = try? channel.finish()
    }

    @Test func aFlushWaitsWhileWritesKeepComingButNotPastItsCaps() throws {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.pipeline.syncOperations.addHandlers([WriteCoalescer(), FrameWriter()])
        let loop = channel.embeddedEventLoop
        // A task that writes in every turn of the loop (as a task hopping between executors does)
        // puts the flush off, turn after turn, and all its writes leave together.
        @Sendable func step(_ turn: Int) {
            if turn < 10 { loop.execute { step(turn + 1) } }
            _ = channel.writeAndFlush(Frame(kind: .message, payload: ByteBuffer(string: "turn \(turn)")))
        }
        loop.execute { step(0) }
        loop.run()
        var pieces: [ByteBuffer] = []
        while let piece = try channel.readOutbound(as: ByteBuffer.self) { pieces.append(piece) }
        #expect(pieces.count == 1)
        // Big writes are not held back: past maxUnflushed bytes the flush goes at once.
        let big = ByteBuffer(repeating: 1, count: WriteCoalescer.maxUnflushed)
        _ = channel.writeAndFlush(Frame(kind: .data, channel: 1, payload: big))
        loop.execute { _ = channel.writeAndFlush(Frame(kind: .message, payload: ByteBuffer(string: "after"))) }
        loop.run()
        var out = ByteBuffer()
        while var piece = try channel.readOutbound(as: ByteBuffer.self) { out.writeBuffer(&piece) }
        #expect(out.readableBytes >= WriteCoalescer.maxUnflushed)
        _ = try? channel.finish()
    }

    private func settled(_ future: EventLoopFuture<Negotiated>) -> Negotiated? {
        let box = Locked<Negotiated?>(nil)
        future.whenSuccess { value in box.withLock { $0 = value } }
        return box.withLock { $0 }
    }

    private func contexts() throws -> SessionTLS.Contexts {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-pipe-\(UUID().uuidString)").path
        let identity = try IdentityStore(paths: NearbyPaths(home: home)).loadOrCreate(defaultName: "pipe")
        return try SessionTLS.contexts(for: identity)
    }

    @Test func thePreambleSplitByteByByteHandsTheServerOverToTLS() throws {
        let tls = try contexts()
        let server = EmbeddedChannel()
        defer { _ = try? server.finish(acceptAlreadyClosed: true) }
        let negotiated = Connections.install(on: server, role: .server, preference: .required, tls: tls.server)
        try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        for byte in Preamble.hello(.optional) { try server.writeInbound(ByteBuffer(bytes: [byte])) }
        let reply = try server.readOutbound(as: ByteBuffer.self)
        #expect(reply.map { Array($0.readableBytesView) } == Preamble.reply(.tls))
        guard case let .frames(frames)? = settled(negotiated) else {
            Issue.record("no frame channel after the preamble")
            return
        }
        #expect(frames.encrypted)
        #expect(throws: Never.self) { try server.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self) }
        #expect(throws: (any Error).self) { try server.pipeline.syncOperations.handler(type: PreambleHandler.self) }
        _ = try? server.finish()
    }

    @Test func bytesThatArriveWithThePreambleReachTLS() throws {
        let tls = try contexts()
        let client = EmbeddedChannel(), server = EmbeddedChannel()
        defer { _ = try? client.finish(acceptAlreadyClosed: true) }
        defer { _ = try? client.finish(acceptAlreadyClosed: true); _ = try? server.finish(acceptAlreadyClosed: true) }
        let clientSide = Connections.install(on: client, role: .client, preference: .required, tls: tls.client)
        let serverSide = Connections.install(on: server, role: .server, preference: .required, tls: tls.server)
        try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2)).wait()
        // The client's preamble, then (once it heard the answer) its TLS ClientHello.
        let hello = try #require(try client.readOutbound(as: ByteBuffer.self))
        try server.writeInbound(hello)
        var answer = try #require(try server.readOutbound(as: ByteBuffer.self))
        try client.writeInbound(answer)
        // Merge what the client sends next (the ClientHello) with nothing in between: the server
        // must hand it straight to TLS, which answers.
        var merged = ByteBuffer()
        while var bytes = try client.readOutbound(as: ByteBuffer.self) { merged.writeBuffer(&bytes) }
        #expect(merged.readableBytes > 0)
        try server.writeInbound(merged)
        answer = try #require(try server.readOutbound(as: ByteBuffer.self))
        #expect(answer.readableBytes > 0)
        // The server's own TLS flight came back: the ClientHello reached TLS, not the preamble.
        #expect(answer.getInteger(at: answer.readerIndex, as: UInt8.self) == 0x16)  // a TLS handshake record
        guard case let .frames(clientFrames)? = settled(clientSide), case let .frames(serverFrames)? = settled(serverSide) else {
            Issue.record("both sides should have frame channels")
            return
        }
        #expect(clientFrames.encrypted && serverFrames.encrypted)
        _ = try? client.finish()
        _ = try? server.finish()
    }
}
