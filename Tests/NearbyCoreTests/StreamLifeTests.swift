import NIOCore
import NIOEmbedded
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyControl
@testable import NearbyTransfer

/// One end of a stream, without sockets: done only when both directions ended, the first cause of
/// a cut is the one reported, and every illegal step is refused.
@Suite struct StreamLifeTests {
    @Test func doneOnlyWhenBothDirectionsEnded() throws {
        var ours = StreamLife()
        try ours.sentClose()
        #expect(ours.state == .sentClose && !ours.isDone)
        try ours.receivedClose()
        #expect(ours.isDone && ours.cause == nil)

        var theirs = StreamLife()
        try theirs.receivedClose()
        #expect(theirs.state == .receivedClose)
        try theirs.mayWrite()
        try theirs.sentClose()
        #expect(theirs.isDone)
    }

    @Test func aSessionThatEndsHalfWayCutsTheStream() throws {
        var life = StreamLife()
        try life.sentClose()
        let changed1 = life.cut(.sessionEnded("reset by peer"))
        #expect(changed1)
        #expect(!life.isDone)
        #expect(life.cause == .sessionEnded("reset by peer"))
        // Later steps neither revive it nor change its cause.
        try life.receivedClose()
        let changed2 = life.cut(.cancelled)
        #expect(!changed2)
        #expect(life.cause == .sessionEnded("reset by peer"))
    }

    @Test func theFirstCauseWins() {
        var life = StreamLife()
        let changed3 = life.cut(.peerReset("stdout: Broken pipe"))
        #expect(changed3)
        let changed4 = life.cut(.failed(code: .ioError, reason: "stdout: Broken pipe"))
        #expect(!changed4)
        let changed5 = life.cut(.sessionEnded("closed"))
        #expect(!changed5)
        #expect(life.cause == .peerReset("stdout: Broken pipe"))
    }

    @Test func aFinishedStreamIsNeverCut() throws {
        var life = StreamLife()
        try life.receivedClose()
        try life.sentClose()
        let changed6 = life.cut(.sessionEnded("closed after the end"))
        #expect(!changed6)
        #expect(life.isDone && life.cause == nil)
    }

    @Test func illegalStepsAreRefused() throws {
        var life = StreamLife()
        try life.sentClose()
        #expect(throws: StreamLife.Violation.secondClose(ours: true)) { try life.sentClose() }
        #expect(throws: StreamLife.Violation.dataAfterClose(ours: true)) { try life.mayWrite() }
        try life.mayRead()
        try life.receivedClose()
        #expect(throws: StreamLife.Violation.secondClose(ours: false)) { try life.receivedClose() }
        #expect(throws: StreamLife.Violation.dataAfterClose(ours: false)) { try life.mayRead() }
        #expect(throws: StreamLife.Violation.secondClose(ours: true)) { try life.sentClose() }

        var half = StreamLife()
        try half.receivedClose()
        #expect(throws: StreamLife.Violation.dataAfterClose(ours: false)) { try half.mayRead() }
        #expect(throws: StreamLife.Violation.secondClose(ours: false)) { try half.receivedClose() }
    }

    @Test func aCutStreamIgnoresLateFrames() throws {
        var life = StreamLife()
        life.cut(.cancelled)
        try life.mayRead()
        try life.mayWrite()
        try life.sentClose()
        try life.receivedClose()
        #expect(life.cause == .cancelled)
    }

    @Test func causesBecomeTheSameFailureEitherWay() {
        let label = "stream 'photos'"
        let lost = StreamLife.Cause.sessionEnded("connection reset by peer").error(label: label)
        #expect(lost.code == "connection-lost" && lost.exitStatus == .connectionFailed)
        #expect(lost.errorDescription == "stream 'photos' was cut: the session ended: connection reset by peer")
        let reset = StreamLife.Cause.peerReset("the other side was interrupted").error(label: "the stream")
        #expect(reset.code == "stream-reset" && reset.exitStatus == .connectionFailed)
        let io = StreamLife.Cause.failed(code: .ioError, reason: "stdout: Broken pipe").error(label: "the stream")
        #expect(io.exitStatus == .ioError && io.errorDescription == "the stream was cut: stdout: Broken pipe")
        #expect(StreamLife.Cause.cancelled.error(label: "the stream").exitStatus == .interrupted)
        // Through a node, the outcome carries the failure; the client rebuilds the very same error.
        for error in [lost, reset, io] { #expect(StreamOutcome(error).error == error) }
        #expect(StreamOutcome.done.error == nil)
        #expect(StreamLife.Cause(NearbyError.ioFailure(path: "stdin", reason: "Input/output error")) == .failed(code: .ioError, reason: "stdin: Input/output error"))
        #expect(StreamLife.Cause(CancellationError()) == .cancelled)
    }
}

/// The records of a stream on a control connection: pieces as they arrive, an `end`, an outcome,
/// and whatever breaks the rules.
@Suite struct StreamWireTests {
    private func record(_ kind: StreamWire.Kind, _ bytes: [UInt8]) -> ByteBuffer {
        var buffer = StreamWire.header(kind, length: bytes.count)
        buffer.writeBytes(bytes)
        return buffer
    }

    private func drain(_ reader: inout StreamWire.Reader, _ input: inout ByteBuffer) throws -> [StreamWire.Record] {
        var out: [StreamWire.Record] = []
        while let record = try reader.next(from: &input) { out.append(record) }
        return out
    }

    @Test func recordsComeOutWhateverTheChunking() throws {
        var all = record(.data, Array(0..<200))
        all.writeImmutableBuffer(record(.data, [1, 2, 3]))
        all.writeImmutableBuffer(StreamWire.end)
        let failure = StreamOutcome.Failure(path: "the stream was cut", code: "connection-lost", reason: "the session ended (x)")
        all.writeImmutableBuffer(StreamWire.outcome(StreamOutcome(failure: failure)))
        for size in [1, 2, 4, 5, 7, 64, 1000] {
            var reader = StreamWire.Reader()
            var data: [UInt8] = []
            var rest: [StreamWire.Record] = []
            var whole = all
            while whole.readableBytes > 0, var chunk = whole.readSlice(length: min(size, whole.readableBytes)) {
                for record in try drain(&reader, &chunk) {
                    if case let .data(piece) = record { data += Array(piece.readableBytesView) } else { rest.append(record) }
                }
                #expect(chunk.readableBytes == 0)
            }
            #expect(data == Array(0..<200) + [1, 2, 3], "chunks of \(size)")
            #expect(rest == [.end, .outcome(StreamOutcome(failure: failure))], "chunks of \(size)")
            #expect(reader.ended && reader.finished)
        }
    }

    @Test func dataIsNotCopied() throws {
        var reader = StreamWire.Reader()
        var input = record(.data, Array(repeating: 9, count: 4096))
        let records = try drain(&reader, &input)
        #expect(records.count == 1)
        guard case let .data(piece)? = records.first else { return #expect(Bool(false)) }
        #expect(piece.readableBytes == 4096)
    }

    @Test func illegalRecordsAreRefused() throws {
        func refuses(_ bytes: ByteBuffer, _ violation: StreamWire.Violation) {
            var reader = StreamWire.Reader()
            var input = bytes
            #expect(throws: violation) { _ = try drain(&reader, &input) }
        }
        refuses(record(.data, []), .badLength(kind: 0, length: 0))
        var unknown = ByteBuffer()
        unknown.writeInteger(UInt8(9))
        unknown.writeInteger(UInt32(0))
        refuses(unknown, .unknownKind(9))
        var twoEnds = StreamWire.end
        twoEnds.writeImmutableBuffer(StreamWire.end)
        refuses(twoEnds, .secondEnd)
        var dataAfterEnd = StreamWire.end
        dataAfterEnd.writeImmutableBuffer(record(.data, [1]))
        refuses(dataAfterEnd, .dataAfterEnd)
        var afterOutcome = StreamWire.outcome(.done)
        afterOutcome.writeImmutableBuffer(record(.data, [1]))
        refuses(afterOutcome, .afterOutcome)
        refuses(record(.outcome, Array("not json".utf8)), .badOutcome)
        var huge = ByteBuffer()
        huge.writeInteger(StreamWire.Kind.data.rawValue)
        huge.writeInteger(UInt32.max)
        refuses(huge, .badLength(kind: 0, length: UInt32.max))
        var longEnd = ByteBuffer()
        longEnd.writeInteger(StreamWire.Kind.end.rawValue)
        longEnd.writeInteger(UInt32(3))
        refuses(longEnd, .badLength(kind: 1, length: 3))
    }
}

/// The watcher that tells a control connection's request its client has gone.
@Suite struct ClientGoneWatcherTests {
    @Test func bytesPassAndTheEndOfInputMeansGone() throws {
        let gone = OneShot<Void>()
        let channel = EmbeddedChannel(handler: ClientGoneWatcher(gone))
        try channel.writeInbound(ByteBuffer(string: "request"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "request"))
        #expect(!gone.isSettled)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(gone.isSettled)
        _ = try? channel.finish()
    }

    @Test func aClosedConnectionMeansGone() throws {
        let gone = OneShot<Void>()
        let channel = EmbeddedChannel(handler: ClientGoneWatcher(gone))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.outputClosed)
        #expect(!gone.isSettled)
        _ = try channel.finish()
        #expect(gone.isSettled)
    }
}
