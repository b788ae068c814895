import NIOCore

@testable import NearbyCore
@testable import NearbyWire

/// Tests build frames as a peer would send them; the machines take them decoded, as the link's
/// reader hands them over (`WireMessage`).
extension SessionStateMachine {
    mutating func received(_ frame: Frame) throws -> [Action] { try received(WireMessage(frame)) }
}

extension HandshakeStateMachine {
    mutating func received(_ frame: Frame) throws -> [Action] { try received(WireMessage(frame)) }
}

extension WireMessage {
    /// The channel frame's ID and message, or a violation for any other frame.
    static func channelFrame(_ frame: Frame) throws(ProtocolViolation) -> (UInt32, ChannelMessage) {
        guard case let .channel(id, message) = try WireMessage(frame) else { throw .unexpected("\(frame.kind) is not a channel frame") }
        return (id, message)
    }
}

extension ChannelMux {
    mutating func receive(_ frame: Frame) throws(ProtocolViolation) -> Inbound {
        let (id, message) = try WireMessage.channelFrame(frame)
        return try receive(id, message)
    }
}

extension LinkChannels {
    func route(_ frame: Frame) throws(ProtocolViolation) -> Route {
        let (id, message) = try WireMessage.channelFrame(frame)
        return try route(id, message)
    }
}

/// Channel frames with a well-formed body, for tests that only care about the type.
enum TestFrames {
    static func close(_ channel: UInt32) -> Frame { FrameBody.frame(.close, FrameBody.Close(sha256: "", bytes: 0), channel: channel) }
    static func reset(_ channel: UInt32) -> Frame { FrameBody.frame(.reset, FrameBody.Reset(reason: "r", code: .cancelled), channel: channel) }
    static func start(_ channel: UInt32) -> Frame { FrameBody.frame(.start, FrameBody.Start(offset: 0), channel: channel) }
}

extension FrameBody {
    /// The body of a frame, as `WireMessage` decodes it (tests read what our machines send; the
    /// node itself decodes a peer's frames only there).
    static func decode<T: Decodable>(_ type: T.Type, from frame: Frame) throws(ProtocolViolation) -> T {
        let body: Any? = switch try WireMessage(frame) {
        case let .hello(body): body
        case let .auth(body): body
        case let .invite(body): body
        case let .answer(body): body
        case let .goodbye(body): body
        case let .probe(body): body
        case let .probeReply(body): body
        case let .datagrams(body): body
        case let .channel(_, .open(body)): body
        case let .channel(_, .openReply(body)): body
        case let .channel(_, .start(body)): body
        case let .channel(_, .close(body)): body
        case let .channel(_, .reset(body)): body
        case .message, .ping, .pong, .channel(_, .data), .channel(_, .window): nil
        }
        guard let typed = body as? T else { throw .malformed("\(frame.kind) frame is not a \(T.self)") }
        return typed
    }
}
