import NIOCore
import NIOEmbedded
import Testing
@testable import NearbyCore
@testable import NearbyWire

/// Each frame type's bound, from the header alone (issue 23: a 1 MiB `hello` was held whole before
/// the 16 KiB check), and the types a stranger may send before a session.
@Suite struct FrameLimitTests {
    private static func header(_ kind: Frame.Kind, channel: UInt32 = 0, length: Int) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeInteger(kind.rawValue)
        out.writeInteger(channel)
        out.writeInteger(UInt32(length))
        return out
    }

    private static let all: [Frame.Kind] = [
        .hello, .auth, .invite, .answer, .message, .ping, .pong, .goodbye, .probe, .probeReply,
        .open, .openReply, .start, .data, .window, .close, .reset, .datagrams,
    ]

    private static func channel(for kind: Frame.Kind) -> UInt32 {
        switch kind {
        case .data, .open, .openReply, .start, .window, .close, .reset: 3
        default: 0
        }
    }

    @Test func eachTypesBound() {
        let control: [Frame.Kind] = [
            .hello, .auth, .invite, .answer, .goodbye, .probe, .probeReply, .open, .openReply, .start, .close, .reset, .datagrams,
        ]
        for kind in control { #expect(kind.maxPayload == 16 << 10, "\(kind)") }
        for kind in [Frame.Kind.ping, .pong, .window] { #expect(kind.maxPayload == 64, "\(kind)") }
        #expect(Frame.Kind.message.maxPayload == 1 << 20)
        #expect(Frame.Kind.data.maxPayload == 1 << 20)
    }

    /// At the limit: nothing refused (the frame is simply incomplete); one byte over: refused from
    /// the header, before any payload byte.
    @Test func theDecoderRefusesOneByteOverEachBoundFromTheHeader() throws {
        for kind in Self.all {
            let channel = Self.channel(for: kind)
            var atLimit = Self.header(kind, channel: channel, length: kind.maxPayload)
            #expect(try FrameDecoder.parse(&atLimit) == nil, "\(kind)")
            var over = Self.header(kind, channel: channel, length: kind.maxPayload + 1)
            if kind.maxPayload == Frame.maxPayload {
                #expect(throws: ProtocolViolation.frameTooLarge(kind.maxPayload + 1), "\(kind)") { try FrameDecoder.parse(&over) }
            } else {
                #expect(throws: ProtocolViolation.oversized(kind, kind.maxPayload + 1, limit: kind.maxPayload), "\(kind)") {
                    try FrameDecoder.parse(&over)
                }
            }
        }
    }

    @Test func messagesOnlyOnChannelZeroDataNeverOnIt() {
        var message = Self.header(.message, channel: 5, length: 3)
        #expect(throws: ProtocolViolation.self) { try FrameDecoder.parse(&message) }
        var data = Self.header(.data, channel: 0, length: 3)
        #expect(throws: ProtocolViolation.self) { try FrameDecoder.parse(&data) }
    }

    /// The hostile case of the issue: a header announcing a 1 MiB hello, then bytes trickling in.
    /// The splitter refuses it at the header and holds nothing.
    @Test func aHugeHelloIsRefusedBeforeAnyPayloadIsHeld() throws {
        let splitter = EmbeddedChannel(handler: FrameSplitter(phase: SessionPhase()))
        defer { _ = try? splitter.finish(acceptAlreadyClosed: true) }
        let header = Self.header(.hello, length: 1 << 20)
        for index in 0..<(Frame.headerSize - 1) {
            try splitter.writeInbound(header.getSlice(at: index, length: 1) ?? ByteBuffer())
        }
        #expect(throws: ProtocolViolation.oversized(.hello, 1 << 20, limit: 16 << 10)) {
            try splitter.writeInbound(header.getSlice(at: Frame.headerSize - 1, length: 1) ?? ByteBuffer())
        }
        try splitter.writeInbound(ByteBuffer(repeating: 0x7B, count: 4096))
        #expect(try splitter.readInbound(as: Frame.self) == nil)
    }

    @Test func beforeASessionOnlyHandshakeInvitationProbeKeepaliveAndGoodbye() throws {
        for kind in Self.all {
            let splitter = EmbeddedChannel(handler: FrameSplitter(phase: SessionPhase()))
            defer { _ = try? splitter.finish(acceptAlreadyClosed: true) }
            let header = Self.header(kind, channel: Self.channel(for: kind), length: 0)
            if kind.allowedBeforeSession {
                try splitter.writeInbound(header)
                #expect(try splitter.readInbound(as: Frame.self)?.kind == kind)
            } else {
                #expect(throws: ProtocolViolation.self, "\(kind)") { try splitter.writeInbound(header) }
            }
        }
        let early: Set<Frame.Kind> = [.hello, .auth, .invite, .answer, .goodbye, .probe, .probeReply, .ping, .pong]
        #expect(Set(Self.all.filter(\.allowedBeforeSession)) == early)
    }

    /// A 1 MiB message before the session: refused at its header, not held.
    @Test func aBigMessageBeforeTheSessionIsRefusedAtItsHeader() throws {
        let splitter = EmbeddedChannel(handler: FrameSplitter(phase: SessionPhase()))
        defer { _ = try? splitter.finish(acceptAlreadyClosed: true) }
        #expect(throws: ProtocolViolation.unexpected("message frame before the session was accepted")) {
            try splitter.writeInbound(Self.header(.message, length: 1 << 20))
        }
    }

    /// The inviting side: the peer's answer begins the session, so a message in the same read
    /// right after it goes up; the accepting side's node begins it itself.
    @Test func theAnswerBeginsTheSessionOnTheInvitingSide() throws {
        var bytes = ByteBuffer()
        FrameEncoder.write(Frame(kind: .answer, payload: ByteBuffer(string: #"{"invitation":"x","accept":true}"#)), into: &bytes)
        FrameEncoder.write(Frame(kind: .message, payload: ByteBuffer(string: "hi")), into: &bytes)
        let phase = SessionPhase()
        let client = EmbeddedChannel(handler: FrameSplitter(phase: phase, client: true))
        defer { _ = try? client.finish(acceptAlreadyClosed: true) }
        try client.writeInbound(bytes)
        #expect(try client.readInbound(as: Frame.self)?.kind == .answer)
        #expect(try client.readInbound(as: Frame.self)?.kind == .message)
        #expect(phase.inSession)

        let server = EmbeddedChannel(handler: FrameSplitter(phase: SessionPhase(), client: false))
        defer { _ = try? server.finish(acceptAlreadyClosed: true) }
        #expect(throws: ProtocolViolation.self) { try server.writeInbound(bytes) }

        let accepted = SessionPhase()
        accepted.begin()
        let later = EmbeddedChannel(handler: FrameSplitter(phase: accepted))
        defer { _ = try? later.finish(acceptAlreadyClosed: true) }
        var message = ByteBuffer()
        FrameEncoder.write(Frame(kind: .message, payload: ByteBuffer(string: "hi")), into: &message)
        try later.writeInbound(message)
        #expect(try later.readInbound(as: Frame.self)?.kind == .message)
    }
}
