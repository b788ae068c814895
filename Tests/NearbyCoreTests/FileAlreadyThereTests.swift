import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

/// A file the receiver already holds at that name (issue 47): the receiver says its size and
/// SHA-256 in its answer, the sender hashes its own only then, and sends no data when they are the
/// same. A receiver's claim is believed only when it is the sender's own hash.
@Suite struct FileAlreadyThereTests {
    private func reply(offset: UInt64 = 0, prefix: String? = nil, held: UInt64?, sha: String?) -> FrameBody.OpenReply {
        FrameBody.OpenReply(accept: true, offset: offset, prefixSHA256: prefix, reason: nil, held: held, heldSHA256: sha)
    }

    private func decoded(_ actions: [FileSendMachine.Action]) -> [FileSendActionTests.Decoded] {
        actions.map { action in
            if case let .send(frame) = action, let message = try? WireMessage(frame) { return .send(message) }
            return .other(action)
        }
    }

    @Test func theSameHashSendsOnlyTheClose() {
        var file = FileSendMachine(size: 10, channel: 5)
        #expect(file.answered(reply(held: 10, sha: "aa")) == [.compareHeld(sha256: "aa")])
        #expect(decoded(file.heldHashed("aa"))
            == [.send(.channel(5, .close(FrameBody.Close(sha256: "aa", bytes: 10, alreadyThere: true))))])
        #expect(file.alreadyThere)
        #expect(throws: FileSendMachine.Illegal.afterEnd) { try file.sent(1) }
        let confirmed = FrameBody.Close(sha256: "aa", bytes: 10, alreadyThere: true)
        #expect(file.receiverClosed(confirmed) == [.delivered(confirmed)])
        #expect(file.state == .closed)
    }

    /// A receiver that says it has the file with a hash that is not ours gets the whole file: it
    /// cannot make the sender report a delivery it did not verify.
    @Test func anotherHashSendsTheFileInFull() {
        var lied = FileSendMachine(size: 10, channel: 1)
        #expect(lied.answered(reply(held: 10, sha: "not-ours")) == [.compareHeld(sha256: "not-ours")])
        #expect(decoded(lied.heldHashed("ours")) == [.send(.channel(1, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])
        #expect(!lied.alreadyThere)
        #expect(throws: Never.self) { try lied.sent(10) }
        _ = lied.ended(sha256: "ours")
        #expect(lied.receiverClosed(FrameBody.Close(sha256: "ours", bytes: 10)) == [.delivered(FrameBody.Close(sha256: "ours", bytes: 10))])

        // Ours could not be read: sent as if nothing were there (reading then fails it, if it must).
        var unread = FileSendMachine(size: 10, channel: 1)
        _ = unread.answered(reply(held: 10, sha: "aa"))
        #expect(decoded(unread.heldHashed(nil)) == [.send(.channel(1, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])

        // A partial file there too: its prefix is checked next, as in any resume.
        var partial = FileSendMachine(size: 10, channel: 1)
        _ = partial.answered(reply(offset: 4, prefix: "p", held: 10, sha: "aa"))
        #expect(partial.heldHashed("bb") == [.checkPrefix(offset: 4, sha256: "p")])
    }

    @Test func aHeldFileOfAnotherSizeIsNotHashed() {
        var file = FileSendMachine(size: 10, channel: 1)
        #expect(decoded(file.answered(reply(held: 9, sha: "aa")))
            == [.send(.channel(1, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])
        var halfSaid = FileSendMachine(size: 10, channel: 1)
        #expect(decoded(halfSaid.answered(reply(held: 10, sha: nil)))
            == [.send(.channel(1, .start(FrameBody.Start(offset: 0)))), .other(.sendData(from: 0))])
    }

    /// After a close without data, the receiver must confirm our very hash; anything else fails.
    @Test func theReceiversConfirmationMustBeOurHash() {
        var file = FileSendMachine(size: 10, channel: 1)
        _ = file.answered(reply(held: 10, sha: "aa"))
        _ = file.heldHashed("aa")
        #expect(file.receiverClosed(FrameBody.Close(sha256: "bb", bytes: 10, alreadyThere: true))
            == [.fail(code: .integrity, reason: "the receiver's SHA-256 differs")])
        var early = FileSendMachine(size: 10, channel: 1)
        _ = early.answered(reply(held: 10, sha: "aa"))
        #expect(early.receiverClosed(FrameBody.Close(sha256: "aa", bytes: 10))
            == [.fail(code: .protocolBroken, reason: "the transfer broke the file protocol: the receiver's confirmation before our end")])
        var twice = FileSendMachine(size: 10, channel: 1)
        _ = twice.answered(reply(held: 10, sha: "aa"))
        _ = twice.heldHashed("aa")
        #expect(twice.heldHashed("aa") == [.fail(code: .protocolBroken, reason: "the transfer broke the file protocol: a second answer to the offer")])
    }

    @Test func theReceiverKeepsItsCopyOnlyForItsOwnHash() throws {
        var file = FileReceiveMachine(size: 10, held: "aa")
        try file.keep(sha256: "aa", announced: 10)
        #expect(file.state == .closed)
        #expect(throws: FileReceiveMachine.Illegal.afterEnd) { try file.keep(sha256: "aa", announced: 10) }

        var other = FileReceiveMachine(size: 10, held: "aa")
        #expect(throws: FileReceiveMachine.Illegal.closeBeforeStart) { try other.keep(sha256: "bb", announced: 10) }
        #expect(throws: FileReceiveMachine.Illegal.closeBeforeStart) { try other.keep(sha256: "aa", announced: 9) }
        #expect(other.state == .offered(resumable: 0))
        // Nothing held (an older sender, or another size there): a close before data is just that.
        var none = FileReceiveMachine(size: 10)
        #expect(throws: FileReceiveMachine.Illegal.closeBeforeStart) { try none.keep(sha256: "aa", announced: 10) }
        // Once the data started, the copy is not kept on the sender's word.
        var started = FileReceiveMachine(size: 10, held: "aa")
        _ = try started.start(at: 0)
        #expect(throws: FileReceiveMachine.Illegal.incomplete(have: 0, announced: 10, size: 10)) { try started.keep(sha256: "aa", announced: 10) }
    }

    @Test func theFramesCarryTheNewFieldsAndOldOnesReadTheRest() throws {
        let reply = FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil, held: 57, heldSHA256: "ab")
        #expect(reply.json == #"{"accept":true,"offset":0,"held":57,"heldSHA256":"ab"}"#)
        let frame = FrameBody.frame(.openReply, reply, channel: 3)
        #expect(try WireMessage(frame) == .channel(3, .openReply(reply)))
        // An older receiver's answer has neither: read as nothing held.
        let old = Frame(kind: .openReply, channel: 3, payload: ByteBuffer(string: #"{"accept":true,"offset":0}"#))
        #expect(try WireMessage(old) == .channel(3, .openReply(FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil))))
        #expect(FrameBody.features.contains(FrameBody.thereFeature))
    }

    @Test func theReceiverHashesOnlyARegularFileOfTheOfferedSize() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("held-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Data("the same bytes".utf8)
        try bytes.write(to: URL(fileURLWithPath: directory + "/mid.bin"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/link.bin", withDestinationPath: directory + "/mid.bin")
        let account = ResourceBudget(limits: .init(descriptors: 4)).account()
        let size = UInt64(bytes.count)
        #expect(await AlreadyThere.held(size: size, in: directory, as: "mid.bin", charging: account) == Transfer.hex(SHA256.hash(data: bytes)))
        #expect(await AlreadyThere.held(size: size + 1, in: directory, as: "mid.bin", charging: account) == nil)
        #expect(await AlreadyThere.held(size: size, in: directory, as: "link.bin", charging: account) == nil)
        #expect(await AlreadyThere.held(size: size, in: directory, as: "none.bin", charging: account) == nil)
    }
}
