import NIOCore

/// Joins the small frames written between two flushes into one buffer before TLS: each write
/// below TLS becomes a TLS record of its own, so 10,000 one-line messages would otherwise cost
/// 10,000 records (22 bytes of overhead and a seal/open each). Big writes (file data) pass as they
/// are, in order; promises complete when the joined buffer is written.
///
/// Flushes wait for the end of the event loop's current batch of work, and for one more turn while
/// writes keep coming: many tasks that each write and flush a message (echoes, `send` to a node,
/// window grants) leave in one `write(2)` instead of one each. A lone message is flushed after one
/// turn; nothing waits past `maxDeferrals` turns or `maxUnflushed` bytes.
final class WriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Writes at most this big are joined; a joined buffer is passed on once it reaches `chunk`.
    static let small = 4096
    static let chunk = 64 << 10

    private var pending: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []
    private var flushScheduled = false

    init() {}

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = Self.unwrapOutboundIn(data)
        writes &+= 1
        unflushed += buffer.readableBytes
        guard buffer.readableBytes <= Self.small else {
            pass(context)
            context.write(data, promise: promise)
            return
        }
        if pending == nil { pending = context.channel.allocator.buffer(capacity: Self.chunk) }
        pending?.writeBuffer(&buffer)
        if let promise { promises.append(promise) }
        if (pending?.readableBytes ?? 0) >= Self.chunk { pass(context) }
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        deferrals = 0
        scheduleFlush(context)
    }

    /// Writes since the flush was last put off: while tasks keep writing, one more turn lets them
    /// join this `write(2)`; a turn without a new write, `maxDeferrals` turns or `maxUnflushed`
    /// bytes waiting flush.
    private var writes = 0
    private var writesWhenScheduled = 0
    private var deferrals = 0
    private var unflushed = 0
    static let maxDeferrals = 64
    static let maxUnflushed = 256 << 10

    private func scheduleFlush(_ context: ChannelHandlerContext) {
        writesWhenScheduled = writes
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            guard handler.flushScheduled else { return }
            if handler.writes != handler.writesWhenScheduled, handler.deferrals < Self.maxDeferrals,
               handler.unflushed < Self.maxUnflushed {
                handler.deferrals += 1
                handler.scheduleFlush(context)
            } else {
                handler.flushNow(context)
            }
        }
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard flushScheduled else { return }
        flushScheduled = false
        unflushed = 0
        pass(context)
        context.flush()
    }

    /// Passes on what is joined so far.
    private func pass(_ context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        pending = nil
        let waiting = promises
        promises = []
        let promise: EventLoopPromise<Void>? = waiting.isEmpty ? nil : context.eventLoop.makePromise()
        if let promise {
            promise.futureResult.whenComplete { result in
                for waiter in waiting { waiter.completeWith(result) }
            }
        }
        context.write(Self.wrapOutboundOut(buffer), promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The channel went away with writes still joined here: they were never written.
        flushScheduled = false
        pending = nil
        let waiting = promises
        promises = []
        for waiter in waiting { waiter.fail(ChannelError.ioOnClosedChannel) }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Half-closing output sends what is joined first (the goodbye before close_notify and FIN).
        flushNow(context)
        pass(context)
        context.close(mode: mode, promise: promise)
    }
}

/// Frames to bytes. A big payload (file or stream data) is not copied: its 9-byte header goes out
/// as a buffer of its own, which `WriteCoalescer` joins to what precedes it, and the payload follows
/// as it is. Small frames are encoded whole.
final class FrameWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Frame
    typealias OutboundOut = ByteBuffer

    init() {}

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = Self.unwrapOutboundIn(data)
        if let encoded = frame.encoded {
            context.write(Self.wrapOutboundOut(encoded), promise: promise)
        } else if frame.payload.readableBytes <= WriteCoalescer.small {
            var out = context.channel.allocator.buffer(capacity: Frame.headerSize + frame.payload.readableBytes)
            FrameEncoder.write(frame, into: &out)
            context.write(Self.wrapOutboundOut(out), promise: promise)
        } else {
            var header = context.channel.allocator.buffer(capacity: Frame.headerSize)
            FrameEncoder.writeHeader(frame, into: &header)
            // Writes complete in order: the payload's promise covers its header too.
            context.write(Self.wrapOutboundOut(header), promise: nil)
            context.write(Self.wrapOutboundOut(frame.payload), promise: promise)
        }
    }
}
