import NIOCore
import NearbyBase

/// Cuts the session's bytes into frames on the event loop, without gathering a data frame whole:
/// the part of a data frame a read brought goes up at once, as a data frame of its own on the same
/// channel, copied once into memory of its own. Every other frame goes up whole, as `FrameDecoder`
/// parses it. Nothing changes on the wire, and nothing above can tell, because a channel's data is
/// only ever a run of bytes: the window counts bytes, not frames.
///
/// Gathering 256 KiB frames (NIO's `ByteToMessageHandler`) cost the receiver three copies of every
/// byte, and fresh pages for the growing buffers: into the gathering buffer, down to its front, and
/// the TLS layer copying its whole read buffer on its next read because a frame still held a slice
/// of it. Between a fifth and a quarter of a receiving node's time in a bulk transfer.
///
/// A hostile peer gains nothing: a header is checked (its type's size bound, the type, the channel,
/// and whether the type may come before a session) before anything is held, a data frame is never
/// held at all, and what is held between reads is at most one frame that is not data: 16 KiB before
/// a session (`Frame.maxBodyPayload`), a 1 MiB message only in one (`Frame.Kind.maxPayload`),
/// and only once the node's `MemoryBudget.frames` gave it room.
///
/// It also paces the connection's reads (`ReadThrottle`): small before the session, held while a frame
/// waits for room or while the process's output is full.
final class FrameSplitter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Frame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The start of a frame an earlier read ended in the middle of (a header, or a frame that is not data).
    private var held = ByteBuffer()
    /// The rest of a data frame whose first bytes went up already.
    private var dataLeft = 0
    private var dataChannel: UInt32 = 0
    /// The rest of a frame that is being dropped, not held (`ReadThrottle.dropsHeldFrames`).
    private var skipLeft = 0
    /// After a protocol violation: the error went up, nothing more is read.
    private var failed = false
    /// Reads that arrived while a frame we passed up was being handled (a handler above read again).
    private var reentered: [ByteBuffer] = []
    private var splitting = false
    /// Whether the session began: before, only the types of `Frame.Kind.allowedBeforeSession`.
    private let phase: SessionPhase
    /// On the side that opened the connection (and invited), the peer's answer begins the session;
    /// the other side's node begins it itself, before it sends its accepting answer.
    private let beginsOnAnswer: Bool
    private let gate: ReadThrottle

    /// `phase` shared with the node; the default (for tests) is a session already begun. Reads are
    /// paced by `output` and the budgets when given (`ReadThrottle`), and `pacing` tells the link's
    /// keepalive when they are held; `waiting` counts what went up and waits for the node.
    init(
        phase: SessionPhase = SessionPhase(inSession: true), client: Bool = false, pacing: ReadPacing = ReadPacing(),
        output: OutputQueue? = nil, frames: MemoryBudget? = nil, bulk: MemoryBudget? = nil, waiting: WaitingFrames? = nil
    ) {
        self.phase = phase
        beginsOnAnswer = client
        gate = ReadThrottle(phase: phase, pacing: pacing, output: output, frames: frames, bulk: bulk, waiting: waiting)
    }

    func read(context: ChannelHandlerContext) {
        gate.read(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        gate.end()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        gate.end()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let input = Self.unwrapInboundIn(data)
        guard !splitting else {
            reentered.append(input)
            return
        }
        splitting = true
        defer { splitting = false }
        var next: ByteBuffer? = input
        while var bytes = next, !failed {
            do throws(ProtocolViolation) {
                try take(&bytes, context: context)
            } catch {
                failed = true
                held = ByteBuffer()
                context.fireErrorCaught(error)
            }
            next = reentered.isEmpty ? nil : reentered.removeFirst()
        }
    }

    private func take(_ input: inout ByteBuffer, context: ChannelHandlerContext) throws(ProtocolViolation) {
        // First complete what an earlier read began, moving over only the bytes it lacks.
        while held.readableBytes > 0, input.readableBytes > 0 {
            let lacking = try Self.lacking(in: held)
            if lacking > 0, var part = input.readSlice(length: min(lacking, input.readableBytes)) {
                held.writeBuffer(&part)
            }
            try split(&held, context: context)
        }
        if held.readableBytes == 0, held.capacity > 0 {
            held = ByteBuffer()
            gate.frameDone()
        }
        try split(&input, context: context)
        // A copy: a few bytes held must not keep the whole read buffer alive.
        if input.readableBytes > 0 { held.writeBuffer(&input) }
        // The frame held now (begun in this read, or its header only just completed) takes its share.
        if held.readableBytes > 0 { gate.holding(held, context) }
    }

    /// Passes up every frame (or part of a data frame) at the front of `buffer`.
    private func split(_ buffer: inout ByteBuffer, context: ChannelHandlerContext) throws(ProtocolViolation) {
        while true {
            if skipLeft > 0 {
                let count = min(skipLeft, buffer.readableBytes)
                guard count > 0 else { return }
                buffer.moveReaderIndex(forwardBy: count)
                skipLeft -= count
                continue
            }
            if dataLeft > 0 {
                let count = min(dataLeft, buffer.readableBytes)
                guard count > 0, let piece = buffer.readSlice(length: count) else { return }
                dataLeft -= count
                context.fireChannelRead(Self.wrapInboundOut(Frame(kind: .data, channel: dataChannel, payload: Self.copy(piece))))
                continue
            }
            guard let header = try FrameDecoder.header(of: buffer) else { return }
            guard header.kind.allowedBeforeSession || phase.inSession else {
                throw .unexpected("\(header.kind) frame before the session was accepted")
            }
            if header.kind != .data, Frame.headerSize + header.length > ReadThrottle.freeFrame, gate.dropsHeldFrames {
                gate.droppedFrame(header.kind)
                skipLeft = Frame.headerSize + header.length
                continue
            }
            if var frame = try FrameDecoder.parse(&buffer) {
                if frame.kind == .data {
                    gate.carriesData(context)
                    frame.payload = Self.copy(frame.payload)
                }
                // A refused or misplaced answer is the state machine's to refuse (it closes).
                if frame.kind == .answer, beginsOnAnswer { phase.begin() }
                context.fireChannelRead(Self.wrapInboundOut(frame))
            } else if header.kind == .data {
                gate.carriesData(context)
                buffer.moveReaderIndex(forwardBy: Frame.headerSize)
                dataLeft = header.length
                dataChannel = header.channel
            } else {
                return
            }
        }
    }

    /// Data to keep (queued for a file or a stream) in memory of its own: the read buffer it came in
    /// is then free again at once, and the layer below (TLS, or the socket) fills it again in place.
    /// Holding a slice instead made that layer copy its whole buffer (512 KiB for a 256 KiB read)
    /// into fresh memory on its next read: twice the bytes copied, and new pages every time.
    /// The copy goes into a buffer of `BufferPool.received` when the writer gave one back.
    private static func copy(_ payload: ByteBuffer) -> ByteBuffer {
        BufferPool.received.copy(payload)
    }

    /// How many more bytes `buffer` (the start of a frame) needs before `split` can take something.
    private static func lacking(in buffer: ByteBuffer) throws(ProtocolViolation) -> Int {
        guard let header = try FrameDecoder.header(of: buffer) else { return Frame.headerSize - buffer.readableBytes }
        if header.kind == .data { return 0 }
        return max(0, Frame.headerSize + header.length - buffer.readableBytes)
    }
}
