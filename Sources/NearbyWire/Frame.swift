import NIOCore

/// One unit of the session protocol (docs/protocol.md): a 9-byte header — type (1), channel (4),
/// payload length (4), big-endian — then the payload. Channel 0 is the session itself (control
/// frames and messages); later channels carry files and streams.
package struct Frame: Equatable, Sendable {
    package enum Kind: UInt8, Sendable {
        case hello = 0x01
        case auth = 0x02
        case invite = 0x03
        case answer = 0x04
        case message = 0x05
        case ping = 0x06
        case pong = 0x07
        case goodbye = 0x08
        /// `nearby doctor`: "do you see my DNS-SD probe?" (FrameBody.Probe), and the answer
        /// (FrameBody.ProbeReply). Only on a link that will never be a session.
        case probe = 0x09
        case probeReply = 0x0A
        /// Files (and later streams) on channels above 0, with per-channel flow control.
        case open = 0x10
        case openReply = 0x11
        case start = 0x12
        case data = 0x13
        case window = 0x14
        case close = 0x15
        case reset = 0x16
        /// `send --unreliable`: where and how to send this side datagrams (FrameBody.Datagrams).
        case datagrams = 0x20
    }

    package static let headerSize = 9
    /// The largest payload a peer may send: checked against the header before anything is buffered.
    package static let maxPayload = 1 << 20
    /// Frames with a JSON body (`FrameBody`: hello, auth, invite, answer, goodbye, probe, probeReply,
    /// datagrams, and the channel frames but data and window) are small JSON documents. Each type's own bound:
    /// `Kind.maxPayload` (FrameLimits.swift).
    package static let maxBodyPayload = 16 << 10

    package var kind: Kind
    package var channel: UInt32
    package var payload: ByteBuffer
    /// Set on a batch (`Frame.batch`): these bytes, already whole frames, go out as they are.
    var encoded: ByteBuffer?

    package init(kind: Kind, channel: UInt32 = 0, payload: ByteBuffer = ByteBuffer()) {
        self.kind = kind
        self.channel = channel
        self.payload = payload
    }

    /// Many frames as one write: encoded here, by the writing task, so the event loop copies one
    /// buffer instead of encoding thousands of frames (`send --lines`). Nothing changes on the wire.
    static func batch(_ frames: some Sequence<Frame>) -> Frame {
        var out = ByteBuffer()
        for frame in frames { FrameEncoder.write(frame, into: &out) }
        var carrier = Frame(kind: .message)
        carrier.encoded = out
        return carrier
    }
}

package enum ProtocolViolation: Error, Equatable, Sendable, CustomStringConvertible {
    case frameTooLarge(Int)
    /// A frame larger than its type allows (`Frame.Kind.maxPayload`), refused from its header.
    case oversized(Frame.Kind, Int, limit: Int)
    case unknownFrameType(UInt8)
    case malformed(String)
    case unexpected(String)

    package var description: String {
        switch self {
        case let .frameTooLarge(size): "frame of \(size) bytes exceeds the maximum of \(Frame.maxPayload)"
        case let .oversized(kind, size, limit): "\(kind) frame of \(size) bytes exceeds the maximum of \(limit) for its type"
        case let .unknownFrameType(type): "unknown frame type \(type)"
        case let .malformed(what): "malformed \(what)"
        case let .unexpected(what): "unexpected \(what)"
        }
    }
}

/// Parses frames, refusing an oversized one from its header alone (its type's bound,
/// `Frame.Kind.maxPayload`), so an untrusted peer cannot make us buffer more than that. Messages
/// only travel on channel 0, data only on a channel above it. The pipeline's `FrameSplitter` is
/// built on it (and also refuses in-session types before a session).
enum FrameDecoder {
    struct Header {
        let kind: Frame.Kind
        let channel: UInt32
        let length: Int
    }

    /// The header at the front of `buffer`, checked, or nil when it is not all there yet.
    static func header(of buffer: ByteBuffer) throws(ProtocolViolation) -> Header? {
        guard buffer.readableBytes >= Frame.headerSize,
              let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              let channel = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 5, as: UInt32.self)
        else { return nil }
        guard length <= Frame.maxPayload else { throw .frameTooLarge(Int(length)) }
        guard let kind = Frame.Kind(rawValue: type) else { throw .unknownFrameType(type) }
        guard length <= kind.maxPayload else { throw .oversized(kind, Int(length), limit: kind.maxPayload) }
        if kind == .message, channel != 0 { throw .unexpected("message frame on channel \(channel)") }
        if kind == .data, channel == 0 { throw .unexpected("data frame on channel 0") }
        return Header(kind: kind, channel: channel, length: Int(length))
    }

    /// Takes one frame off the front of `buffer`, or nil when it is not all there yet.
    package static func parse(_ buffer: inout ByteBuffer) throws(ProtocolViolation) -> Frame? {
        guard let header = try header(of: buffer), buffer.readableBytes >= Frame.headerSize + header.length else { return nil }
        buffer.moveReaderIndex(forwardBy: Frame.headerSize)
        guard let payload = buffer.readSlice(length: header.length) else { return nil }
        return Frame(kind: header.kind, channel: header.channel, payload: payload)
    }
}

/// Frames to bytes (the pipeline's `FrameWriter`, `Frame.batch`, tests).
enum FrameEncoder {
    package static func write(_ frame: Frame, into out: inout ByteBuffer) {
        if var encoded = frame.encoded {
            out.writeBuffer(&encoded)
            return
        }
        writeHeader(frame, into: &out)
        var payload = frame.payload
        out.writeBuffer(&payload)
    }

    static func writeHeader(_ frame: Frame, into out: inout ByteBuffer) {
        out.writeInteger(frame.kind.rawValue)
        out.writeInteger(frame.channel)
        out.writeInteger(UInt32(frame.payload.readableBytes))
    }
}
