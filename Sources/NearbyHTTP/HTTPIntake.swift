import NIOCore
import NIOHTTP1
import NearbyBase

/// What a connection's bytes may cost before NIOHTTP1 decodes them, and how far ahead of its answers
/// a peer may be decoded: NIOHTTP1's decoder parses every byte it is given at once (a burst of
/// pipelined requests becomes thousands of queued heads, which `NIOAsyncChannel`'s back-pressure
/// counts as parts, not bytes) and keeps without limit what it does not parse (after a request that
/// asks to switch protocols, or a `CONNECT`, it stops parsing: `HTTPDecoder.stopParsing`). So the
/// bytes are given to it by `HTTPIntake` in front, a slice at a time and only while every request
/// decoded so far has been answered, and `HTTPMeter` behind it counts what came out: bytes that
/// made no part past `unparsedLimit` (whatever the decoder is doing with them) close the connection.
package enum HTTPIntakeLimits {
    /// Bytes given to the decoder between two parts it gives back: a head is at most 16 KiB of fields
    /// (`HTTPLimits.decoder`) and a line; past this the decoder is holding or eating what it is fed.
    package static let unparsedLimit = 64 << 10
    /// Bytes held in front of the decoder while answers are owed. No read is asked for while any
    /// is held, so what is held is at most one read burst (`maxMessagesPerRead` reads of at most
    /// 64 KiB, 256 KiB) plus the part of a TLS record the TLS handler kept from the burst before:
    /// a peer that pipelines is simply not read until it is answered (back-pressure, its bytes wait
    /// in the kernel's buffers). Only a channel that delivers bytes it was not asked for can
    /// reach this bound, and that is closed. (At 256 KiB, a burst of pipelined uploads under load
    /// closed a friend's connection.)
    package static let heldLimit = 1 << 20
    /// A slice given while no request body is under way: a request head, a few small ones.
    package static let headSlice = 1 << 10
    /// A slice given inside a body (a TLS record's worth).
    package static let bodySlice = 16 << 10

    /// How a connection reads between requests and in their heads: one read of 16 KiB a wake-up, so
    /// that what a peer that only asks (and reads no answer) makes the node keep is a request head's
    /// worth, not a burst of 4 × 64 KiB and the TLS plaintext buffer that grows to it and never
    /// shrinks (64 connections pipelining GETs: ~1 MB each).
    package static let headReads = Reads(size: 16 << 10, perCycle: 1)
    /// Inside a request's body (an upload): up to 4 reads of up to 64 KiB a wake-up.
    package static let bodyReads = Reads(size: 64 << 10, perCycle: 4)

    package struct Reads: Sendable {
        let size: Int
        let perCycle: UInt
        var allocator: AdaptiveRecvByteBufferAllocator { AdaptiveRecvByteBufferAllocator(minimum: 64, initial: min(2048, size), maximum: size) }
    }
}

/// What the two ends of the intake share, on the connection's event loop.
final class HTTPIntakeState {
    /// Requests decoded to their end minus requests answered (negative: answered before their end).
    var owed = 0
    /// Bytes given to the decoder since it last gave back a part.
    var unparsed = 0
    /// Inside a request: its head decoded, its end not yet.
    var inRequest = false
    /// Closed for good (over a limit, or an error answered).
    var shut = false
    var open: Bool { owed <= 0 && !shut }
}

/// Told by the server (a user outbound event) each time it has answered a request.
package struct HTTPAnswered: Sendable { package init() {} }

/// In front of NIOHTTP1's decoder: holds what was read while answers are owed (and then reads no
/// more), and gives it to the decoder in slices.
final class HTTPIntake: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny

    private let state: HTTPIntakeState
    private var held = CircularBuffer<ByteBuffer>()
    private var heldBytes = 0
    /// A read was asked for and kept back.
    private var readWanted = false
    private var feeding = false
    /// The connection's first request line so far, until it ends: HTTP/0.9's `GET /` (no version)
    /// is refused at once, where NIOHTTP1 waits for the fields it will never get.
    private var firstLine: [UInt8]? = []

    init(_ state: HTTPIntakeState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard !state.shut, buffer.readableBytes > 0 else { return }
        held.append(buffer)
        heldBytes += buffer.readableBytes
        guard heldBytes <= HTTPIntakeLimits.heldLimit else { return shut(context, "\(heldBytes) bytes held undecoded while answers are owed") }
        feed(context)
    }

    func read(context: ChannelHandlerContext) {
        guard state.open, held.isEmpty else {
            readWanted = true
            return
        }
        pace(context)
        context.read()
    }

    /// Reads sized for what comes next (`HTTPIntakeLimits.headReads`, `bodyReads`).
    private var bodyReads = false
    private func pace(_ context: ChannelHandlerContext) {
        guard state.inRequest != bodyReads, let options = context.channel.syncOptions else { return }
        bodyReads = state.inRequest
        let reads = bodyReads ? HTTPIntakeLimits.bodyReads : HTTPIntakeLimits.headReads
        try? options.setOption(.recvAllocator, value: reads.allocator)
        try? options.setOption(.maxMessagesPerRead, value: reads.perCycle)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is HTTPAnswered else { return context.triggerUserOutboundEvent(event, promise: promise) }
        promise?.succeed(())
        state.owed -= 1
        guard state.open else { return }
        if !held.isEmpty {
            feed(context)
            context.fireChannelReadComplete()
        }
        if state.open, held.isEmpty, readWanted {
            readWanted = false
            pace(context)
            context.read()
        }
    }

    private func feed(_ context: ChannelHandlerContext) {
        guard !feeding else { return }
        feeding = true
        defer { feeding = false }
        while state.open, var first = held.first {
            let size = min(first.readableBytes, state.inRequest ? HTTPIntakeLimits.bodySlice : HTTPIntakeLimits.headSlice)
            guard let slice = first.readSlice(length: size) else { break }
            if first.readableBytes == 0 { held.removeFirst() } else { held[held.startIndex] = first }
            heldBytes -= size
            state.unparsed += size
            guard firstLine == nil || Self.scan(slice, into: &firstLine) else {
                state.shut = true
                held.removeAll()
                heldBytes = 0
                context.fireErrorCaught(HTTPParserError.invalidVersion)
                return
            }
            context.fireChannelRead(wrapInboundOut(slice))
            guard state.unparsed <= HTTPIntakeLimits.unparsedLimit else { return shut(context, "\(state.unparsed) bytes given to the decoder with no part back") }
        }
    }

    /// Adds `slice` to the first request line; false when that line ended without an HTTP version
    /// (nil once it ended with one, or grew past what a head may be).
    static func scan(_ slice: ByteBuffer, into line: inout [UInt8]?) -> Bool {
        guard var sofar = line else { return true }
        for byte in slice.readableBytesView {
            guard byte == UInt8(ascii: "\n") else {
                sofar.append(byte)
                continue
            }
            if sofar.last == UInt8(ascii: "\r") { sofar.removeLast() }
            // Blank lines before a request are allowed.
            if sofar.isEmpty { continue }
            line = nil
            let end = sofar.suffix(9)
            return end.count == 9 && end.starts(with: Array(" HTTP/".utf8)) && end.dropFirst(6).allSatisfy { $0 == UInt8(ascii: ".") || (0x30...0x39).contains($0) }
        }
        line = sofar.count > 16 << 10 ? nil : sofar
        return true
    }

    private func shut(_ context: ChannelHandlerContext, _ why: String) {
        NearbyLog.logger.debug("closing an HTTP connection from \(context.remoteAddress.map(AddressWords.describe) ?? "?"): \(why)")
        state.shut = true
        held.removeAll()
        heldBytes = 0
        context.close(promise: nil)
    }
}

/// Behind NIOHTTP1's decoder (in place of its `HTTPServerProtocolErrorHandler`): counts the parts
/// that came out for `HTTPIntake`, answers a request the decoder refused with one 400 and closes —
/// unless an answer is already under way or owed, then it only closes once it is written — and
/// drops whatever is written after (the route that had the refused request's head does not answer
/// it a second time).
final class HTTPMeter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: HTTPIntakeState
    /// An answer's head written and not yet its end.
    private var answering = false
    /// The decoder refused a request: nothing more is written.
    private var refused = false

    init(_ state: HTTPIntakeState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        state.unparsed = 0
        switch unwrapInboundIn(data) {
        case .head: state.inRequest = true
        case .body: break
        case .end:
            state.inRequest = false
            state.owed += 1
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError, !refused {
            NearbyLog.logger.debug("refusing an HTTP request from \(context.remoteAddress.map(AddressWords.describe) ?? "?"): \(error)")
            refused = true
            state.shut = true
            if answering || state.owed > 0 {
                // The answers owed are still written (the server answers what it has), then the
                // stream's error ends the connection.
                refused = false
            } else {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "0")
                headers.add(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !refused else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case let .head(head) where !head.isInformational: answering = true
        case .end: answering = false
        case .head, .body: break
        }
        context.write(data, promise: promise)
    }
}

extension HTTPResponseHead {
    var isInformational: Bool { (100..<200).contains(status.code) && status.code != 101 }
}
