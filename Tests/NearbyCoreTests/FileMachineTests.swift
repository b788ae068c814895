import NIOCore
import Crypto
import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

/// The two halves of the file protocol, without sockets: every legal path to the one end, and every
/// illegal step refused without moving the machine where it should not go.
@Suite struct FileReceiveMachineTests {
    @Test func aFileFromStartToClose() throws {
        var file = FileReceiveMachine(size: 10)
        #expect(!file.started)
        #expect(try file.start(at: 0) == false)
        #expect(try file.data(4) == 0)
        #expect(try file.data(6) == 4)
        #expect(file.position == 10)
        try file.close(announced: 10)
        #expect(file.state == .closed)
        let reset1 = file.reset()
        #expect(!reset1)
    }

    @Test func aResumeStartsWhereTheOfferSaid() throws {
        var file = FileReceiveMachine(size: 10, resumable: 7)
        #expect(try file.start(at: 7))
        #expect(file.skipped == 7)
        #expect(try file.data(3) == 7)
        try file.close(announced: 10)
    }

    @Test func theSendersCloseIsAnsweredByTheMachine() throws {
        var file = FileReceiveMachine(size: 1000)
        #expect(file.ending(announced: 1000, theirs: "a", ours: "a") == .fail(reason: "the file ended before it started"))
        _ = try file.start(at: 0)
        _ = try file.data(400)
        // Short, with the right hash of what came: the byte count is the cause.
        #expect(file.ending(announced: 1000, theirs: "a5e6", ours: "a5e6")
            == .fail(reason: "the file arrived incomplete: the sender sent 400 of 1,000 bytes"))
        _ = try file.data(600)
        #expect(file.ending(announced: 900, theirs: "a", ours: "a") == .fail(reason: "the sender's close announced 900 of 1,000 bytes"))
        #expect(file.ending(announced: 1000, theirs: "b", ours: "a") == .fail(reason: "the file arrived damaged (SHA-256 a ≠ b)"))
        #expect(file.ending(announced: 1000, theirs: "a", ours: "a") == .place)
        try file.close(announced: 1000)
        #expect(file.ending(announced: 1000, theirs: "a", ours: "a") == .fail(reason: "the file had ended already"))
    }

    @Test func illegalStepsAreSaidInWords() {
        #expect("\(FileReceiveMachine.Illegal.dataBeforeStart)" == "data before start")
        #expect("\(FileReceiveMachine.Illegal.startMismatch(offset: 5))" == "a start at 5, which was not offered")
        #expect("\(FileSendMachine.Illegal.confirmBeforeClose)" == "the receiver's confirmation before our end")
    }

    @Test func aResumableLongerThanTheFileIsNotOffered() {
        let file = FileReceiveMachine(size: 10, resumable: 11)
        #expect(file.state == .offered(resumable: 0))
    }

    @Test func illegalStepsAreRefused() throws {
        var offered = FileReceiveMachine(size: 10, resumable: 4)
        #expect(throws: FileReceiveMachine.Illegal.startMismatch(offset: 5)) { try offered.start(at: 5) }
        #expect(throws: FileReceiveMachine.Illegal.dataBeforeStart) { _ = try offered.data(1) }
        #expect(throws: FileReceiveMachine.Illegal.closeBeforeStart) { try offered.close(announced: 10) }
        #expect(offered.state == .offered(resumable: 4))

        var receiving = FileReceiveMachine(size: 10)
        _ = try receiving.start(at: 0)
        #expect(throws: FileReceiveMachine.Illegal.secondStart) { _ = try receiving.start(at: 0) }
        _ = try receiving.data(8)
        #expect(throws: FileReceiveMachine.Illegal.pastEnd(size: 10)) { _ = try receiving.data(3) }
        #expect(receiving.position == 8)
        #expect(throws: FileReceiveMachine.Illegal.incomplete(have: 8, announced: 10, size: 10)) { try receiving.close(announced: 10) }
        _ = try receiving.data(2)
        #expect(throws: FileReceiveMachine.Illegal.incomplete(have: 10, announced: 9, size: 10)) { try receiving.close(announced: 9) }
        try receiving.closable(announced: 10)
        #expect(receiving.state != .closed)

        let reset2 = receiving.reset()
        #expect(reset2)
        let reset3 = receiving.reset()
        #expect(!reset3)
        #expect(throws: FileReceiveMachine.Illegal.afterEnd) { _ = try receiving.data(1) }
        #expect(throws: FileReceiveMachine.Illegal.afterEnd) { try receiving.close(announced: 10) }
        #expect(throws: FileReceiveMachine.Illegal.afterEnd) { _ = try receiving.start(at: 0) }
    }
}

@Suite struct FileSendMachineTests {
    @Test func aFileFromOpenToConfirmation() throws {
        var file = FileSendMachine(size: 10)
        #expect(try file.replied(accept: true, offset: 0) == 0)
        try file.start(at: 0)
        try file.sent(10)
        try file.finished(sha256: "abc")
        #expect(try file.confirmed(sha256: "abc"))
        #expect(file.state == .closed)
        let reset4 = file.reset()
        #expect(!reset4)
    }

    @Test func aRefusalEndsIt() throws {
        var file = FileSendMachine(size: 10)
        #expect(try file.replied(accept: false, offset: 0) == nil)
        #expect(file.state == .reset)
        #expect(throws: FileSendMachine.Illegal.afterEnd) { _ = try file.replied(accept: true, offset: 0) }
    }

    @Test func aResumeIsCappedAtTheFileAndMayFallBackToZero() throws {
        var file = FileSendMachine(size: 10)
        #expect(try file.replied(accept: true, offset: 50) == 10)
        try file.start(at: 0)  // the receiver's bytes were not ours
        #expect(file.position == 0)
        try file.sent(10)
        try file.finished(sha256: "x")
        #expect(try file.confirmed(sha256: "y") == false)
        #expect(file.state == .reset)
    }

    @Test func illegalStepsAreRefused() throws {
        var file = FileSendMachine(size: 10)
        #expect(throws: FileSendMachine.Illegal.dataBeforeStart) { try file.sent(1) }
        #expect(throws: FileSendMachine.Illegal.dataBeforeStart) { try file.start(at: 0) }
        #expect(throws: FileSendMachine.Illegal.confirmBeforeClose) { _ = try file.confirmed(sha256: "a") }
        _ = try file.replied(accept: true, offset: 0)
        #expect(throws: FileSendMachine.Illegal.secondReply) { _ = try file.replied(accept: true, offset: 0) }
        #expect(throws: FileSendMachine.Illegal.dataBeforeStart) { try file.sent(1) }
        #expect(throws: FileSendMachine.Illegal.dataBeforeStart) { try file.finished(sha256: "a") }
        try file.start(at: 0)
        #expect(throws: FileSendMachine.Illegal.startTwice) { try file.start(at: 0) }
        try file.sent(4)
        #expect(throws: FileSendMachine.Illegal.pastEnd(size: 10)) { try file.sent(7) }
        #expect(throws: FileSendMachine.Illegal.closeBeforeEnd(position: 4, size: 10)) { try file.finished(sha256: "a") }
        #expect(throws: FileSendMachine.Illegal.confirmBeforeClose) { _ = try file.confirmed(sha256: "a") }
        try file.sent(6)
        try file.finished(sha256: "a")
        #expect(throws: FileSendMachine.Illegal.afterEnd) { try file.sent(0) }
        #expect(throws: FileSendMachine.Illegal.afterEnd) { try file.finished(sha256: "a") }
        let reset5 = file.reset()
        #expect(reset5)
        #expect(throws: FileSendMachine.Illegal.afterEnd) { _ = try file.confirmed(sha256: "a") }
    }
}

/// A link's channel table: what runs on each channel goes with the link, at once. What runs there
/// is anything that is a `ChannelEnd` (the wire knows no more of Transfer's types).
@Suite struct LinkChannelsTests {
    final class End: ChannelEnd {
        func received(_ message: ChannelMessage, on port: any ChannelPort) async throws(ProtocolViolation) {}
        func linkEnded(_ reason: CloseReason) {}
    }

    private func frame(_ kind: Frame.Kind, _ channel: UInt32) -> Frame {
        Frame(kind: kind, channel: channel)
    }

    @Test func framesReachWhatRunsOnTheirChannel() throws {
        let channels = LinkChannels(isClient: true)
        let sending = channels.open { id in
            let end = End()
            return (end, (id, end))
        }
        let (id, end) = try #require(sending)
        #expect(id == 1)
        guard case let .deliver(routed, _) = try channels.route(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: 1)) else {
            Issue.record("the answer did not reach the sender")
            return
        }
        #expect(routed === end)
        // The peer's offer goes to the node; once accepted its frames go to what took it.
        guard case .offer = try channels.route(FrameBody.frame(.open, FrameBody.Open(kind: .file, path: "a", size: 1, key: ""), channel: 2)) else {
            Issue.record("an offer was not an offer")
            return
        }
        let file = End()
        #expect(channels.accept(2, file))
        guard case let .deliver(taker, _) = try channels.route(TestFrames.start(2)), taker === file else {
            Issue.record("the start did not reach the file")
            return
        }
        // A reset ends the channel at once: later frames on it are ignored.
        guard case .deliver = try channels.route(TestFrames.reset(2)) else {
            Issue.record("the reset did not reach the file")
            return
        }
        guard case .ignore = try channels.route(frame(.data, 2)) else {
            Issue.record("a frame after the reset was not ignored")
            return
        }
    }

    @Test func droppingTheLinkTakesEverythingAndAcceptsNothingMore() throws {
        let channels = LinkChannels(isClient: false)
        _ = channels.open { id in (End(), id) }
        _ = channels.open { id in (End(), id) }
        #expect(channels.drop().count == 2)
        #expect(channels.drop().isEmpty)
        #expect(channels.open { id in (End(), id) } == nil)
        #expect(!channels.hold(3, End()))
    }

    @Test func theCapHolds() {
        let channels = LinkChannels(isClient: true, limits: ChannelMux.Limits(channels: 2))
        #expect(channels.open { id in (End(), id) } == 1)
        #expect(channels.open { id in (End(), id) } == 3)
        #expect(channels.open { id in (End(), id) } == nil)
        channels.finish(1)
        #expect(channels.open { id in (End(), id) } == 5)
    }
}

/// Channel kinds and transfer codes are enums on the wire; what a peer sends that this version does
/// not know is kept (capped), never a decoding failure.
@Suite struct ChannelCodeTests {
    @Test func knownAndUnknownNamesRoundTrip() throws {
        for code in ["cancelled", "connection-lost", "io-error", "integrity", "protocol", "no-save-dir", "stream-reset"] {
            #expect(TransferCode(code).description == code)
            #expect(TransferCode(code) != .other(code))
        }
        #expect(TransferCode(String(repeating: "z", count: 100)) == .other(String(repeating: "z", count: 32)))
        let reset = FrameBody.Reset(reason: "r", code: .connectionLost)
        #expect(try WireMessage(FrameBody.frame(.reset, reset, channel: 1)) == .channel(1, .reset(reset)))
        #expect(TransferCode.cancelled.resumable && TransferCode.connectionLost.resumable && !TransferCode.integrity.resumable)

        let open = Frame(kind: .open, channel: 2, payload: ByteBuffer(string: #"{"kind":"telnet","path":"a","size":1,"key":""}"#))
        #expect(try WireMessage(open) == .channel(2, .open(FrameBody.Open(kind: .other("telnet"), path: "a", size: 1, key: ""))))
        let file = Frame(kind: .open, channel: 2, payload: ByteBuffer(string: #"{"kind":"file","path":"a","size":1,"key":""}"#))
        #expect(try WireMessage(file) == .channel(2, .open(FrameBody.Open(kind: .file, path: "a", size: 1, key: ""))))
    }
}

/// The same file sent again: only a regular file of that size and SHA-256 is "already there".
@Suite struct AlreadyThereTests {
    @Test func onlyTheSameBytesUnderTheSameNameCount() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("already-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Data("the same bytes".utf8)
        try bytes.write(to: URL(fileURLWithPath: directory + "/mid.bin"))
        let sha = Transfer.hex(SHA256.hash(data: bytes))
        #expect(await AlreadyThere.copy(of: sha, size: UInt64(bytes.count), in: directory, as: "mid.bin") == directory + "/mid.bin")
        #expect(await AlreadyThere.copy(of: sha, size: UInt64(bytes.count) + 1, in: directory, as: "mid.bin") == nil)
        #expect(await AlreadyThere.copy(of: String(repeating: "0", count: 64), size: UInt64(bytes.count), in: directory, as: "mid.bin") == nil)
        #expect(await AlreadyThere.copy(of: sha, size: UInt64(bytes.count), in: directory, as: "other.bin") == nil)
        // A link to the same bytes is not the file itself.
        try FileManager.default.createSymbolicLink(atPath: directory + "/link.bin", withDestinationPath: directory + "/mid.bin")
        #expect(await AlreadyThere.copy(of: sha, size: UInt64(bytes.count), in: directory, as: "link.bin") == nil)
    }
}

/// The sender's machine says what to do, as `SessionStateMachine` does: tested without a socket.
@Suite struct FileSendActionTests {
    private let open = FrameBody.Open(kind: .file, path: "a.bin", size: 10, key: "k")

    /// An action, with its frame decoded (JSON keys come in no fixed order).
    enum Decoded: Equatable {
        case send(WireMessage)
        case other(FileSendMachine.Action)
    }

    private func decoded(_ actions: [FileSendMachine.Action]) -> [Decoded] {
        actions.map { action in
            if case let .send(frame) = action, let message = try? WireMessage(frame) { return .send(message) }
            return .other(action)
        }
    }

    @Test func aFileFromOfferToDelivery() {
        var file = FileSendMachine(size: 10, channel: 3)
        #expect(decoded(file.offer(open)) == [.send(.channel(3, .open(open)))])
        #expect(decoded(file.answered(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil)))
            == [.send(.channel(3, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])
        #expect(throws: Never.self) { try file.sent(10) }
        #expect(decoded(file.ended(sha256: "abc")) == [.send(.channel(3, .close(FrameBody.Close(sha256: "abc", bytes: 10))))])
        let confirmed = FrameBody.Close(sha256: "abc", bytes: 10, alreadyThere: true)
        #expect(file.receiverClosed(confirmed) == [.delivered(confirmed)])
        #expect(file.state == .closed)
    }

    @Test func aResumeChecksThePrefixFirst() {
        var file = FileSendMachine(size: 10, channel: 1)
        #expect(file.answered(FrameBody.OpenReply(accept: true, offset: 4, prefixSHA256: "p", reason: nil)) == [.checkPrefix(offset: 4, sha256: "p")])
        #expect(decoded(file.prefixChecked(4, ours: true)) == [.send(.channel(1, .start(FrameBody.Start(offset: 4)))), .other(.sendData(from: 4))])
        var other = FileSendMachine(size: 10, channel: 1)
        _ = other.answered(FrameBody.OpenReply(accept: true, offset: 4, prefixSHA256: "p", reason: nil))
        #expect(decoded(other.prefixChecked(4, ours: false)) == [.send(.channel(1, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])
    }

    @Test func refusalsResetsAndDamageFailIt() {
        var refused = FileSendMachine(size: 10)
        #expect(refused.answered(FrameBody.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: "full", code: .busy))
            == [.fail(code: .busy, reason: "the peer refused the file: full")])
        var stopped = FileSendMachine(size: 10)
        _ = stopped.answered(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))
        #expect(stopped.receiverReset(FrameBody.Reset(reason: "disk", code: .ioError)) == [.fail(code: .ioError, reason: "the receiver stopped: disk")])
        var damaged = FileSendMachine(size: 1)
        _ = damaged.answered(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))
        try? damaged.sent(1)
        _ = damaged.ended(sha256: "a")
        #expect(damaged.receiverClosed(FrameBody.Close(sha256: "b", bytes: 1)) == [.fail(code: .integrity, reason: "the receiver's SHA-256 differs")])
        var late = FileSendMachine(size: 1)
        _ = late.answered(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))
        #expect(late.answered(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))
            == [.fail(code: .protocolBroken, reason: "the transfer broke the file protocol: a second answer to the offer")])
        var early = FileSendMachine(size: 1)
        #expect(early.receiverClosed(FrameBody.Close(sha256: "a", bytes: 1))
            == [.fail(code: .protocolBroken, reason: "the transfer broke the file protocol: the receiver's confirmation before our end")])
        var gone = FileSendMachine(size: 1)
        #expect(gone.lost("cut") == [.fail(code: .connectionLost, reason: "cut")])
        #expect(gone.state == .reset)
    }
}
