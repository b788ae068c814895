import Foundation
import NIOCore

/// One frame from the peer, decoded once where it is read (the handshake, the link's loop, the
/// doctor's question), as swift-nio-ssh's `SSHMessage`: every state machine after that takes this
/// enum and never looks at a payload's bytes again. A payload that does not decode is a
/// `ProtocolViolation` with a reason, here, before any machine sees it; messages and data keep the
/// frame's own buffer (no copy).
package enum WireMessage: Equatable, Sendable {
    case hello(FrameBody.Hello)
    case auth(FrameBody.Auth)
    case invite(FrameBody.Invite)
    case answer(FrameBody.Answer)
    case message(ByteBuffer)
    /// Keepalives: their payload (empty, or a few bytes, `Frame.maxTinyPayload`) carries nothing
    /// we read, so any is taken.
    case ping
    case pong
    case goodbye(FrameBody.Goodbye)
    case probe(FrameBody.Probe)
    case probeReply(FrameBody.ProbeReply)
    case datagrams(FrameBody.Datagrams)
    /// A frame of a file or stream channel (any ID here: the session's rules refuse channel 0).
    case channel(UInt32, ChannelMessage)

    /// Decodes a frame the `FrameDecoder` took off the wire (its size already checked against its type).
    package init(_ frame: Frame) throws(ProtocolViolation) {
        switch frame.kind {
        case .hello: self = .hello(try Self.body(of: frame))
        case .auth: self = .auth(try Self.body(of: frame))
        case .invite: self = .invite(try Self.body(of: frame))
        case .answer: self = .answer(try Self.body(of: frame))
        case .message: self = .message(frame.payload)
        case .ping: self = .ping
        case .pong: self = .pong
        case .goodbye: self = .goodbye(try Self.body(of: frame))
        case .probe: self = .probe(try Self.body(of: frame))
        case .probeReply: self = .probeReply(try Self.body(of: frame))
        case .datagrams: self = .datagrams(try Self.body(of: frame))
        case .open: self = .channel(frame.channel, .open(try Self.flatBody(of: frame)))
        case .openReply: self = .channel(frame.channel, .openReply(try Self.flatBody(of: frame)))
        case .start: self = .channel(frame.channel, .start(try Self.flatBody(of: frame)))
        case .data: self = .channel(frame.channel, .data(frame.payload))
        case .window:
            guard frame.payload.readableBytes == 4, let more = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self) else {
                throw .malformed("window frame")
            }
            self = .channel(frame.channel, .window(more))
        case .close: self = .channel(frame.channel, .close(try Self.flatBody(of: frame)))
        case .reset: self = .channel(frame.channel, .reset(try Self.flatBody(of: frame)))
        }
    }

    /// The frame type it came as, for sentences and the rules that go by type.
    package var kind: Frame.Kind {
        switch self {
        case .hello: .hello
        case .auth: .auth
        case .invite: .invite
        case .answer: .answer
        case .message: .message
        case .ping: .ping
        case .pong: .pong
        case .goodbye: .goodbye
        case .probe: .probe
        case .probeReply: .probeReply
        case .datagrams: .datagrams
        case let .channel(_, message): message.kind
        }
    }

    /// The channel it came on: 0 but for channel frames.
    package var channel: UInt32 {
        if case let .channel(id, _) = self { return id }
        return 0
    }

    /// The file protocol's hot bodies: read in place by `FlatJSON`, which leaves to JSONDecoder
    /// only what it does not decide (forms peers never send), so the answer is JSONDecoder's.
    private static func flatBody<T: FlatJSONDecodable>(of frame: Frame) throws(ProtocolViolation) -> T {
        guard frame.payload.readableBytes <= Frame.maxBodyPayload else {
            throw .malformed("\(frame.kind) frame: \(frame.payload.readableBytes) bytes")
        }
        do {
            return try FlatJSON.decode(T.self, from: frame.payload)
        } catch .undecided {
            return try decoded(frame)
        } catch {
            throw .malformed("\(frame.kind) frame")
        }
    }

    /// A frame's JSON body: bounded (the header check already bounds it by type; this holds
    /// for any caller), then decoded, or a violation naming the frame type.
    private static func body<T: Decodable>(of frame: Frame) throws(ProtocolViolation) -> T {
        guard frame.payload.readableBytes <= Frame.maxBodyPayload else {
            throw .malformed("\(frame.kind) frame: \(frame.payload.readableBytes) bytes")
        }
        return try decoded(frame)
    }

    private static func decoded<T: Decodable>(_ frame: Frame) throws(ProtocolViolation) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(frame.payload.readableBytesView))
        } catch {
            throw .malformed("\(frame.kind) frame")
        }
    }
}

/// What a frame on a channel above 0 says (docs/protocol.md, "Channels").
package enum ChannelMessage: Equatable, Sendable {
    case open(FrameBody.Open)
    case openReply(FrameBody.OpenReply)
    case start(FrameBody.Start)
    /// The frame's own buffer (FrameSplitter gives each payload memory of its own).
    case data(ByteBuffer)
    /// More credit: this many bytes.
    case window(UInt32)
    case close(FrameBody.Close)
    case reset(FrameBody.Reset)

    package var kind: Frame.Kind {
        switch self {
        case .open: .open
        case .openReply: .openReply
        case .start: .start
        case .data: .data
        case .window: .window
        case .close: .close
        case .reset: .reset
        }
    }
}

extension NIOAsyncChannelInboundStream<Frame>.AsyncIterator {
    /// The next frame from the peer, decoded (`WireMessage`): where every reader of a connection
    /// takes its frames.
    mutating func nextMessage() async throws -> WireMessage? {
        guard let frame = try await next() else { return nil }
        return try WireMessage(frame)
    }
}
