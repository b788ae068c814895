import NIOCore
import NearbyBase

/// Whether a link's reads are held now, shared with its keepalive: a link whose reads we hold does
/// not hear its peer, and that silence is ours, not the peer's.
final class ReadPacing: Sendable {
    private struct State {
        var held = false
        var released = ContinuousClock.now
    }

    private let state = Locked(State())

    init() {}

    func hold() { state.withLock { $0.held = true } }

    func release() {
        state.withLock { state in
            if state.held { state.released = .now }
            state.held = false
        }
    }

    var isHeld: Bool { state.withLock { $0.held } }

    /// The silence the keepalive counts, given how long since the peer was `heard`: none while reads
    /// are held, and at most the time since they were let go again.
    func silence(_ heard: Duration) -> Duration {
        state.withLock { state in state.held ? .zero : min(heard, ContinuousClock.now - state.released) }
    }
}

/// A connection's reads, paced by what they would make the node hold (on its event loop, owned by
/// the `FrameSplitter`, which sees every byte):
///
/// - Before the session, reads are small (`Connections.handshakeReads`: one 16 KiB read at a time):
///   what a stranger can make a connection hold is a handshake frame, not a quarter of a MiB of
///   read buffers and the TLS buffer they grow.
/// - In the session, reads are of up to 32 KiB, one at a time; a link carrying a file's or a
///   stream's data reads 2 × 512 KiB at a time once `MemoryBudget.bulkReads` grants it room.
/// - A frame held whole while it arrives (a message of up to 1 MiB) first takes its size from
///   `MemoryBudget.frames`; until it gets it, no more is read.
/// - A link whose frames wait for the node (`WaitingFrames`) past one message's worth does not read
///   until the node has handled them.
/// - While the process's output (`OutputQueue`) is full, a link in session does not read: the
///   lines it would make have nowhere to go. Handshakes read on.
///
/// A read held is made once what held it is gone. TCP's flow control does the rest.
final class ReadThrottle {
    private let phase: SessionPhase
    private let pacing: ReadPacing
    private let output: OutputQueue?
    private let frames: MemoryBudget?
    private let bulk: MemoryBudget?
    private let waiting: WaitingFrames?

    /// A read asked for and not yet passed on.
    private var heldRead = false
    /// Waiting for the output to have room (a wake-up is on its way): the queue's number for it.
    private var outputWaiter: UInt64?
    private var waitingForOutput = false
    /// The share of `frames` the frame held now took (or waits for).
    private var frameShare: MemoryBudget.Share?
    private var bulkShare: MemoryBudget.Share?
    private var sessionReads = false
    private var ended = false

    /// Frames up to this size are held without asking (every frame but a message).
    static let freeFrame = Frame.headerSize + Frame.maxBodyPayload
    /// What a link reading in bulk holds: 2 reads of 512 KiB, and TLS's buffer of as much.
    static let bulkShareBytes = 2 << 20

    init(
        phase: SessionPhase, pacing: ReadPacing, output: OutputQueue?, frames: MemoryBudget?, bulk: MemoryBudget?,
        waiting: WaitingFrames? = nil
    ) {
        self.phase = phase
        self.pacing = pacing
        self.output = output
        self.frames = frames
        self.bulk = bulk
        self.waiting = waiting
    }

    /// The channel asks to read.
    func read(_ context: ChannelHandlerContext) {
        if phase.inSession, !sessionReads {
            sessionReads = true
            Self.set(context, reads: Connections.sessionReads)
        }
        if let frameShare, !frameShare.isGranted { return hold() }
        if let waiting, waiting.bytes > WaitingFrames.perLink {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let over = waiting.over { [eventLoop = context.eventLoop] in
                eventLoop.execute {
                    let (gate, context) = bound.value
                    gate.retry(context)
                }
            }
            if over { return hold() }
        }
        if phase.inSession, let output, output.isFull {
            if !waitingForOutput {
                waitingForOutput = true
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                outputWaiter = output.whenRoom { [eventLoop = context.eventLoop] in
                    eventLoop.execute {
                        let (gate, context) = bound.value
                        gate.waitingForOutput = false
                        gate.outputWaiter = nil
                        gate.retry(context)
                    }
                }
            }
            return hold()
        }
        heldRead = false
        pacing.release()
        context.read()
    }

    /// Whether a frame held whole (a message) that arrives now is dropped instead: reads are held,
    /// so this read was not asked for. Only NIO makes one: it reads a connection whose peer closed
    /// (or reset it) to its end at once, whatever `autoRead` says (`BaseSocketChannel.readEOF0`),
    /// and 200 peers that close at once while the output is full would otherwise put what their
    /// sockets held, ~128 KiB each, in the node's memory until it is printed.
    /// A frame that began before and got its share is kept.
    var dropsHeldFrames: Bool { heldRead && phase.inSession && !(frameShare?.isGranted ?? false) }

    /// A message arrived while `dropsHeldFrames`: counted as a line the output dropped.
    func droppedFrame(_ kind: Frame.Kind) {
        output?.dropped(kind: kind == .message ? "message" : "line")
    }

    private func hold() {
        heldRead = true
        pacing.hold()
    }

    private func retry(_ context: ChannelHandlerContext) {
        guard heldRead, !ended else { return }
        read(context)
    }

    /// The splitter holds the start of a frame (`held`, header complete or not) between reads.
    func holding(_ held: ByteBuffer, _ context: ChannelHandlerContext) {
        guard let frames, frameShare == nil, held.readableBytes >= Frame.headerSize,
              let length = held.getInteger(at: held.readerIndex + 5, as: UInt32.self),
              Frame.headerSize + Int(length) > Self.freeFrame
        else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        frameShare = frames.take(Frame.headerSize + Int(length)) { [eventLoop = context.eventLoop] in
            eventLoop.execute {
                let (gate, context) = bound.value
                gate.retry(context)
            }
        }
    }

    /// The frame held is complete and gone up.
    func frameDone() {
        guard let share = frameShare else { return }
        frameShare = nil
        frames?.give(share)
    }

    /// A data frame (a file's or a stream's bytes) arrived: read in bulk, when there is room for it.
    func carriesData(_ context: ChannelHandlerContext) {
        guard bulkShare == nil, phase.inSession, let bulk, let share = bulk.tryTake(Self.bulkShareBytes) else { return }
        bulkShare = share
        Self.set(context, reads: Connections.bulkReads)
    }

    /// The connection ended: every share goes back.
    func end() {
        ended = true
        if let outputWaiter { output?.forget(outputWaiter) }
        outputWaiter = nil
        frameDone()
        waiting?.end()
        if let bulkShare { bulk?.give(bulkShare) }
        bulkShare = nil
        pacing.release()
    }

    private static func set(_ context: ChannelHandlerContext, reads: Connections.Reads) {
        guard let options = context.channel.syncOptions else { return }
        try? options.setOption(ChannelOptions.recvAllocator, value: reads.allocator)
        try? options.setOption(ChannelOptions.maxMessagesPerRead, value: reads.perCycle)
    }
}
