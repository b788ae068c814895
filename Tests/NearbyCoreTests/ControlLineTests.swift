import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire

/// The control socket's request line in any number of reads (issue 23: a line that came in more
/// than one read was dropped, so `nearby send PEER < 60KB-file` through a running node exited 5).
@Suite struct ControlLineTests {
    /// A `send` request carrying a 1 MB message (the largest the product allows is 1 MiB): about
    /// 1.4 MB of JSON, then the bytes that follow it on the connection.
    private static let request: [UInt8] = {
        let payload = [UInt8]((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let line = (try? JSONEncoder().encode(ControlRequest.send(peers: ["friend"], all: false, timeout: 5, payload: Data(payload)))) ?? Data()
        return Array(line) + Array("\n".utf8) + Array("after".utf8)
    }()

    @Test func aOneMegabyteRequestSplitAnyWayIsOneLine() throws {
        let bytes = Self.request
        let newline = try #require(bytes.firstIndex(of: UInt8(ascii: "\n")))
        let expected = String(decoding: bytes[..<newline], as: UTF8.self)
        for size in [1, 2, 3, 7, 1000, 4095, 4096, 4097, 65_537, 262_144, bytes.count] {
            var reader = LineReader()
            var line: String?
            var offset = 0
            // Reads of `size` at the start and across the newline; the middle of a 1.4 MB line in
            // one read when `size` is small (byte by byte all the way is 16 s of one core in a
            // debug build, which held up every other suite on a loaded 2-core machine).
            let edge = 65_536
            while line == nil, offset < bytes.count {
                let bulk = size < 4096 && offset >= edge && offset < newline - edge
                let end = min(bulk ? newline - edge : offset + size, bytes.count)
                line = try reader.append(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
            #expect(line == expected, "chunks of \(size)")
            // What came after the newline in the same read is kept for the stream.
            let rest = reader.rest
            #expect(Array(rest.readableBytesView) == Array(bytes[(newline + 1)..<offset]), "chunks of \(size)")
            let request = try JSONDecoder().decode(ControlRequest.self, from: Data((line ?? "").utf8))
            guard case let .send(_, _, _, payload) = request else { Issue.record("not a send"); continue }
            #expect(payload.count == 1_000_000)
        }
    }

    @Test func aChunkStraddlingTheNewlineAndCutsAroundIt() throws {
        let bytes = Self.request
        let newline = try #require(bytes.firstIndex(of: UInt8(ascii: "\n")))
        for cut in (newline - 2)...(newline + 2) {
            var reader2 = LineReader()
            let first = try reader2.append(ByteBuffer(bytes: bytes[..<cut]))
            let line = try first ?? reader2.append(ByteBuffer(bytes: bytes[cut...]))
            #expect(line?.utf8.count == newline, "cut at \(cut)")
            // What came with the line in its read is kept for the stream, and nothing else.
            let kept = first == nil ? Array("after".utf8) : Array(bytes[(newline + 1)..<cut])
            #expect(Array(reader2.rest.readableBytesView) == kept, "cut at \(cut)")
        }
    }

    @Test func twoLinesInOneReadComeOneByOne() throws {
        var reader = LineReader()
        #expect(try reader.append(ByteBuffer(string: "one\ntw")) == "one")
        #expect(try reader.line() == nil)
        #expect(try reader.append(ByteBuffer(string: "o\n")) == "two")
    }

    @Test func aLineOverTheLimitIsRefusedWithAClearError() throws {
        var reader = LineReader()
        let chunk = ByteBuffer(repeating: UInt8(ascii: "a"), count: 1 << 20)
        var failure: NearbyError?
        for _ in 0...(LineReader.answerLimit >> 20) {
            do throws(NearbyError) {
                _ = try reader.append(chunk)
            } catch {
                failure = error
                break
            }
        }
        #expect(failure?.errorDescription?.contains("over its limit of 8388608 bytes") == true)
        var whole = LineReader()
        var big = ByteBuffer(repeating: UInt8(ascii: "a"), count: LineReader.answerLimit + 1)
        big.writeString("\n")
        #expect(throws: NearbyError.self) { try whole.append(big) }
    }

    /// A request carries at most a 1 MiB message (as base64) and the request around it: a client
    /// that sends more is cut there, not at 8 MiB.
    @Test func aRequestLineIsBoundedByTheLargestRequest() throws {
        let largest = ControlRequest.send(peers: ["p"], all: false, timeout: 30, payload: Data(repeating: 0xFF, count: Frame.maxPayload))
        let bytes = try ControlClient.requestLine(largest)
        #expect(bytes.readableBytes < LineReader.requestLimit)
        #expect(LineReader.requestLimit < 3 << 19)
        var fits = LineReader(limit: LineReader.requestLimit)
        #expect(try fits.append(bytes) != nil)
        var over = LineReader(limit: LineReader.requestLimit)
        #expect(throws: NearbyError.self) {
            try over.append(ByteBuffer(repeating: UInt8(ascii: "a"), count: LineReader.requestLimit + 1))
        }
    }
}

/// Reply lines: an event is its own object, not JSON inside a string; which kind a line is comes
/// from its keys, strictly.
@Suite struct ControlReplyTests {
    @Test func eachKindRoundTripsAndEventsStayByteForByte() throws {
        let event = #"{"event":"check","time":"2026-11-18T11:06:40.500Z","check":"daemon","detail":"d","hint":null,"status":"ok"}"#
        #expect(ControlReply.event(event).line == event)
        #expect(try ControlReply.decode(event) == .event(event))
        #expect(ControlReply.status(8).line == #"{"status":8}"#)
        #expect(try ControlReply.decode(#"{"status":8}"#) == .status(8))
        let info = StreamInfo(stream: "3", peer: PeerRef(id: "p", name: nil), name: "n", readsInput: true)
        #expect(try ControlReply.decode(ControlReply.streamReady(info).line) == .streamReady(info))
        #expect(!ControlReply.streamReady(info).line.contains(#"\""#))
    }

    @Test func anythingElseIsAnErrorNotAGuess() {
        for line in ["", "{}", "not json", #"{"status":"ok"}"#, #"{"event":3}"#, #"{"status":1,"stream_ready":{"stream":"1","peer":{"id":"p","name":null},"name":""}}"#] {
            #expect(throws: NearbyError.self, "\(line)") { try ControlReply.decode(line) }
        }
    }
}
