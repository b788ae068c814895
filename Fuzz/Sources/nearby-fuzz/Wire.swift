import Foundation
import NIOCore
import NIOEmbedded
@testable import NearbyBase
@testable import NearbyCore
@testable import NearbyWire

/// nearby's own wire: frames off the socket, their JSON bodies, the control socket's lines.
enum WireTargets {
    static let all = [
        FuzzTarget(name: "frames", run: frames),
        FuzzTarget(name: "frames-flatjson", run: flatJSON),
        FuzzTarget(name: "control-lines", run: controlLines),
    ]

    /// What the splitter passed on, consecutive data frames of one channel joined (the splitter
    /// passes a data frame on in the pieces it arrived in), and how it ended.
    struct Split: Equatable {
        var frames: [Frame] = []
        var failure: String?

        mutating func add(_ frame: Frame) {
            if frame.kind == .data, let last = frames.last, last.kind == .data, last.channel == frame.channel {
                var joined = last.payload
                var more = frame.payload
                joined.writeBuffer(&more)
                frames[frames.count - 1] = Frame(kind: .data, channel: frame.channel, payload: joined)
            } else {
                frames.append(frame)
            }
        }
    }

    /// The bytes through the real `FrameSplitter` in an EmbeddedChannel, read as given.
    static func split(_ reads: [ArraySlice<UInt8>]) -> Split {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        var out = Split()
        do {
            try channel.pipeline.syncOperations.addHandler(FrameSplitter())
        } catch {
            Fuzz.violated("the splitter would not join a pipeline: \(error)")
        }
        for read in reads {
            do {
                try channel.writeInbound(ByteBuffer(bytes: read))
            } catch {
                out.failure = "\(error)"
            }
            while let frame = try? channel.readInbound(as: Frame.self) { out.add(frame) }
            if out.failure != nil { break }
        }
        return out
    }

    /// Frames from a peer: the splitter fed in pieces agrees with one fed whole and with
    /// `FrameDecoder` on the whole; each frame decodes (or is refused) as a `WireMessage` without a
    /// trap, and a frame written again reads back the same.
    static func frames(_ input: [UInt8]) {
        let (whole, pieces) = Fuzz.pieces(input)
        let inPieces = split(pieces)
        let atOnce = split([whole[...]])
        Fuzz.check(inPieces == atOnce, "the splitter fed in pieces gave \(inPieces), fed whole \(atOnce)")
        var buffer = ByteBuffer(bytes: whole)
        var decoded = Split()
        while let frame = try? FrameDecoder.parse(&buffer) {
            decoded.add(frame)
            _ = try? WireMessage(frame)
            var again = ByteBuffer()
            FrameEncoder.write(frame, into: &again)
            let reread = try? FrameDecoder.parse(&again)
            Fuzz.check(reread == frame && again.readableBytes == 0, "a frame written again read back as \(String(describing: reread))")
        }
        // The splitter passes on the start of a data frame not all there yet (FrameDecoder waits for
        // it), joined to the one before on its channel: the last frame may have more payload.
        let count = decoded.frames.count
        Fuzz.check(atOnce.frames.count >= count, "the splitter passed on \(atOnce.frames.count) frames, FrameDecoder \(count)")
        Fuzz.check(Array(atOnce.frames.prefix(count).dropLast()) == Array(decoded.frames.dropLast()), "the splitter and FrameDecoder disagree")
        if let last = decoded.frames.last {
            let theirs = atOnce.frames[count - 1]
            let same = last.kind == .data
                ? theirs.kind == .data && theirs.channel == last.channel && theirs.payload.readableBytesView.starts(with: last.payload.readableBytesView)
                : theirs == last
            Fuzz.check(same, "the splitter's frame \(theirs) is not FrameDecoder's \(last)")
        }
    }

    /// The hot bodies: `FlatJSON`'s value is JSONDecoder's, its refusal one JSONDecoder makes too
    /// (the property FlatJSONTests checks on generated bodies, here on whatever libFuzzer finds).
    static func flatJSON(_ input: [UInt8]) {
        agree(FrameBody.Open.self, input)
        agree(FrameBody.OpenReply.self, input)
        agree(FrameBody.Start.self, input)
        agree(FrameBody.Close.self, input)
        agree(FrameBody.Reset.self, input)
        // And the bodies only JSONDecoder reads, as frames of their kinds (hello, auth, invite, ...).
        guard input.count <= Frame.maxBodyPayload else { return }
        for kind in [Frame.Kind.hello, .auth, .invite, .answer, .goodbye, .probe, .probeReply, .datagrams] {
            _ = try? WireMessage(Frame(kind: kind, payload: ByteBuffer(bytes: input)))
        }
    }

    static func agree<T: FlatJSONDecodable & Equatable>(_: T.Type, _ bytes: [UInt8]) {
        let foundation = try? JSONDecoder().decode(T.self, from: Data(bytes))
        do {
            let flat = try FlatJSON.decode(T.self, from: ByteBuffer(bytes: bytes))
            Fuzz.check(flat == foundation, "FlatJSON read \(T.self) as \(flat), JSONDecoder as \(String(describing: foundation))")
        } catch .malformed {
            Fuzz.check(foundation == nil, "FlatJSON refused what JSONDecoder reads as \(String(describing: foundation))")
        } catch {
            return
        }
    }

    /// The control socket: lines split the same in pieces as whole; each line decodes as a request
    /// (the node's side) and as a reply (the client's) without a trap.
    static func controlLines(_ input: [UInt8]) {
        let (whole, pieces) = Fuzz.pieces(input)
        let limit = 512
        func lines(_ reads: [ArraySlice<UInt8>]) -> ([String], Bool) {
            var reader = LineReader(limit: limit)
            var out: [String] = []
            do {
                for read in reads {
                    if let line = try reader.append(ByteBuffer(bytes: read)) { out.append(line) }
                    while let line = try reader.line() { out.append(line) }
                }
            } catch {
                return (out, true)
            }
            return (out, false)
        }
        let inPieces = lines(pieces)
        let atOnce = lines([whole[...]])
        // A reader fed whole may refuse an over-long line before one fed in pieces has seen it end,
        // so the lines must agree until either refuses.
        let agreed = min(inPieces.0.count, atOnce.0.count)
        Fuzz.check(inPieces.0.prefix(agreed) == atOnce.0.prefix(agreed), "lines in pieces \(inPieces.0), whole \(atOnce.0)")
        if !inPieces.1, !atOnce.1 { Fuzz.check(inPieces.0 == atOnce.0, "lines in pieces \(inPieces.0), whole \(atOnce.0)") }
        for line in atOnce.0 {
            _ = try? JSONDecoder().decode(ControlRequest.self, from: Data(line.utf8))
            _ = try? ControlReply.decode(line)
        }
    }
}
