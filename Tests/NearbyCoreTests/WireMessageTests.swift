import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyWire

/// The one decoder of a peer's frames: every type comes back as it was sent, and no payload a peer
/// can write (cut short, garbage, the wrong JSON types) does anything but a `ProtocolViolation`.
@Suite struct WireMessageTests {
    /// One frame of each type, as our machines write them, and what it must decode to.
    static let examples: [(Frame, WireMessage)] = {
        let hello = FrameBody.Hello(version: 2, id: "abc", name: "n", key: "a2V5", commitment: "Y29t", features: ["probe"])
        let auth = FrameBody.Auth(nonce: "bm9uY2U=", signature: "c2ln")
        let invite = FrameBody.Invite(invitation: "i1", context: "ctx", timeout: 30)
        let answer = FrameBody.Answer(invitation: "i1", accept: false, reason: "no")
        let goodbye = FrameBody.Goodbye(reason: "bye")
        let probe = FrameBody.Probe(instance: "doctor-1")
        let reply = FrameBody.ProbeReply(seen: true, waited: 12, addresses: ["10.0.0.1"], reason: nil)
        let datagrams = FrameBody.Datagrams(port: 4000, tag: 42, key: Array(repeating: 7, count: 32))
        let open = FrameBody.Open(kind: .file, path: "a/b.txt", size: 10, key: "k")
        let openReply = FrameBody.OpenReply(accept: true, offset: 3, prefixSHA256: "ab", reason: nil, code: nil)
        let start = FrameBody.Start(offset: 3)
        let close = FrameBody.Close(sha256: "cd", bytes: 10, alreadyThere: true, savedAs: "b (1).txt")
        let reset = FrameBody.Reset(reason: "stop", code: .busy)
        var window = ByteBuffer()
        window.writeInteger(UInt32(65536))
        return [
            (FrameBody.frame(.hello, hello), .hello(hello)),
            (FrameBody.frame(.auth, auth), .auth(auth)),
            (FrameBody.frame(.invite, invite), .invite(invite)),
            (FrameBody.frame(.answer, answer), .answer(answer)),
            (Frame(kind: .message, payload: ByteBuffer(string: "hi")), .message(ByteBuffer(string: "hi"))),
            (Frame(kind: .ping), .ping),
            (Frame(kind: .pong), .pong),
            (FrameBody.frame(.goodbye, goodbye), .goodbye(goodbye)),
            (FrameBody.frame(.probe, probe), .probe(probe)),
            (FrameBody.frame(.probeReply, reply), .probeReply(reply)),
            (FrameBody.frame(.datagrams, datagrams), .datagrams(datagrams)),
            (FrameBody.frame(.open, open, channel: 1), .channel(1, .open(open))),
            (FrameBody.frame(.openReply, openReply, channel: 2), .channel(2, .openReply(openReply))),
            (FrameBody.frame(.start, start, channel: 3), .channel(3, .start(start))),
            (Frame(kind: .data, channel: 5, payload: ByteBuffer(string: "bytes")), .channel(5, .data(ByteBuffer(string: "bytes")))),
            (Frame(kind: .window, channel: 7, payload: window), .channel(7, .window(65536))),
            (FrameBody.frame(.close, close, channel: 9), .channel(9, .close(close))),
            (FrameBody.frame(.reset, reset, channel: 11), .channel(11, .reset(reset))),
        ]
    }()

    @Test func everyTypeRoundTrips() throws {
        var kinds = Set<UInt8>()
        for (frame, expected) in Self.examples {
            let decoded = try WireMessage(frame)
            #expect(decoded == expected)
            #expect(decoded.kind == frame.kind)
            #expect(decoded.channel == frame.channel)
            kinds.insert(frame.kind.rawValue)
        }
        // Every type the protocol has is among them.
        let all = (0...255).compactMap { Frame.Kind(rawValue: UInt8($0))?.rawValue }
        #expect(kinds == Set(all))
    }

    @Test func messagesAndDataKeepTheirBytes() throws {
        let payload = ByteBuffer(repeating: 9, count: 1000)
        guard case let .channel(_, .data(bytes)) = try WireMessage(Frame(kind: .data, channel: 1, payload: payload)) else {
            Issue.record("data did not decode as data")
            return
        }
        #expect(bytes == payload)
    }

    /// Cut anywhere before its end, a JSON body is no longer one: each cut is a violation.
    @Test func truncatedBodiesAreViolations() {
        for (frame, _) in Self.examples where Self.isJSON(frame.kind) {
            let bytes = Array(frame.payload.readableBytesView)
            for length in [0, 1, bytes.count / 2, bytes.count - 1] {
                let cut = Frame(kind: frame.kind, channel: frame.channel, payload: ByteBuffer(bytes: bytes.prefix(length)))
                #expect(throws: ProtocolViolation.self, "\(frame.kind) cut to \(length) bytes") { try WireMessage(cut) }
            }
        }
    }

    @Test func wrongTypesAreViolations() {
        let bodies: [(Frame.Kind, String)] = [
            (.reset, #"{"reason":5,"code":"busy"}"#),
            (.reset, #"{"reason":"r"}"#),
            (.openReply, #"{"accept":"yes","offset":0}"#),
            (.openReply, #"{"accept":true,"offset":-1}"#),
            (.close, #"{"sha256":"x","bytes":"ten"}"#),
            (.close, #"[1,2]"#),
            (.goodbye, #"{"reason":null}"#),
            (.goodbye, #"{}"#),
            (.start, #"{"offset":1.5}"#),
            (.open, #"{"kind":7,"path":"a","size":1,"key":""}"#),
            (.invite, #"{"invitation":"a","timeout":"soon"}"#),
            (.hello, #"{"version":"2","id":"x","name":"n","key":"","commitment":""}"#),
            (.datagrams, #"{"port":1,"tag":"t"}"#),
            (.probeReply, #""seen""#),
        ]
        for (kind, body) in bodies {
            let frame = Frame(kind: kind, channel: kind.rawValue >= 0x10 && kind != .datagrams ? 1 : 0, payload: ByteBuffer(string: body))
            #expect(throws: ProtocolViolation.malformed("\(kind) frame"), "\(kind) \(body)") { try WireMessage(frame) }
        }
    }

    @Test func windowsAreFourBytes() {
        for count in [0, 3, 5, 64] {
            let frame = Frame(kind: .window, channel: 1, payload: ByteBuffer(repeating: 1, count: count))
            #expect(throws: ProtocolViolation.malformed("window frame")) { try WireMessage(frame) }
        }
    }

    /// Garbage of every length up to a few hundred bytes, for every type: decoded or refused, never a crash.
    @Test func garbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        for raw in 0...255 {
            guard let kind = Frame.Kind(rawValue: UInt8(raw)) else { continue }
            for length in [1, 2, 4, 9, 31, 200, 700] {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let frame = Frame(kind: kind, channel: 1, payload: ByteBuffer(bytes: bytes))
                do {
                    let message = try WireMessage(frame)
                    // Only the types whose payload is not JSON take any bytes.
                    #expect(!Self.isJSON(kind), "\(kind) took garbage: \(message)")
                } catch {
                    #expect(Self.isJSON(kind) || kind == .window)
                }
            }
        }
    }

    @Test func anOversizedBodyIsRefusedBeforeDecoding() {
        let huge = Frame(kind: .reset, channel: 1, payload: ByteBuffer(repeating: 0x20, count: Frame.maxBodyPayload + 1))
        #expect(throws: ProtocolViolation.self) { try WireMessage(huge) }
    }

    static func isJSON(_ kind: Frame.Kind) -> Bool {
        ![.message, .ping, .pong, .data, .window].contains(kind)
    }
}
