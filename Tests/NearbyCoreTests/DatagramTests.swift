import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

@Suite struct DatagramTests {
    let key = SymmetricKey(size: .bits256)

    @Test func sealedDatagramOpensToTheMessage() throws {
        let sealed = try Datagram.seal(ByteBuffer(string: "cursor 1,2"), key: key, tag: 0xABCD, sequence: 7)
        #expect(sealed.readableBytes == 10 + Datagram.overhead)
        #expect(Datagram.tag(of: sealed) == 0xABCD)
        #expect(Datagram.sequence(of: sealed) == 7)
        #expect(Datagram.open(sealed, key: key) == Array("cursor 1,2".utf8))
    }

    @Test func anyChangedByteOrOtherKeyFailsToOpen() throws {
        let sealed = try Datagram.seal(ByteBuffer(string: "hello"), key: key, tag: 1, sequence: 1)
        for index in 0..<sealed.readableBytes {
            var tampered = sealed
            let byte = try #require(tampered.getInteger(at: index, as: UInt8.self))
            tampered.setInteger(byte ^ 0x01, at: index)
            #expect(Datagram.open(tampered, key: key) == nil, "byte \(index) changed")
        }
        #expect(Datagram.open(sealed, key: SymmetricKey(size: .bits256)) == nil)
        #expect(Datagram.open(sealed.getSlice(at: 0, length: sealed.readableBytes - 1) ?? ByteBuffer(), key: key) == nil)
        #expect(Datagram.open(ByteBuffer(bytes: [1, 2, 3]), key: key) == nil)
    }

    @Test func oversizedDatagramIsRefused() throws {
        let big = try Datagram.seal(ByteBuffer(repeating: 0x41, count: Datagram.maxPayload + 1), key: key, tag: 1, sequence: 1)
        #expect(Datagram.open(big, key: key) == nil)
        let largest = try Datagram.seal(ByteBuffer(repeating: 0x41, count: Datagram.maxPayload), key: key, tag: 1, sequence: 1)
        #expect(Datagram.open(largest, key: key)?.count == Datagram.maxPayload)
    }

    @Test func replayWindowTakesEachNumberOnce() {
        var window = ReplayWindow()
        #expect(!window.check(0))
        // 3 comes late but inside the window; every repeat is refused.
        let taken = [1, 1, 5, 3, 3, 2, 4, 5].map { window.commit(UInt64($0)) }
        #expect(taken == [true, false, true, true, false, true, true, false])
        #expect(window.highest == 5)
    }

    @Test func replayWindowSlidesAcrossWords() {
        var window = ReplayWindow()
        let odd = stride(from: UInt64(1), through: 2999, by: 2).map { window.commit($0) }
        #expect(odd.allSatisfy { $0 })
        // Odd numbers seen, even ones not: inside the window the evens are new, the odds replays.
        for sequence in UInt64(3000 - 1000)...2999 {
            #expect(window.check(sequence) == (sequence % 2 == 0), "sequence \(sequence)")
        }
        // Too old to tell: dropped.
        #expect(!window.check(2999 - ReplayWindow.size))
        let later = [10_000, 2998, 9_999, 9_999].map { window.commit(UInt64($0)) }
        #expect(later == [true, false, true, false], "far behind after a jump; then one late, once")
    }

    @Test func setupFrameRoundTripsAndRejectsBadKeys() throws {
        let setup = FrameBody.Datagrams(port: 4242, tag: 0x0102_0304_0506_0708, key: Array(repeating: 7, count: 32))
        let checked = try #require(setup.checked)
        #expect(checked.port == 4242 && checked.tag == 0x0102_0304_0506_0708)
        var bad = setup
        bad.key = Data(repeating: 1, count: 16).base64EncodedString()
        #expect(bad.checked == nil)
        bad = setup
        bad.port = 0
        #expect(bad.checked == nil)
        var machine = SessionStateMachine()
        _ = machine.invite(id: "i", context: nil, timeout: 5)
        _ = try machine.received(FrameBody.frame(.answer, FrameBody.Answer(invitation: "i", accept: true, reason: nil)))
        #expect(try machine.received(FrameBody.frame(.datagrams, setup)) == [.datagrams(setup)])
        #expect(throws: ProtocolViolation.self) { try machine.received(FrameBody.frame(.datagrams, bad)) }
    }

    @Test func linesAreSplitAcrossChunksAndBounded() throws {
        var splitter = LineSplitter(limit: 8)
        #expect(try splitter.append(ByteBuffer(string: "ab")).isEmpty)
        let first = try splitter.append(ByteBuffer(string: "c\n\nde\nf"))
        #expect(first.map { String(buffer: $0) } == ["abc", "", "de"])
        #expect(splitter.finish().map { String(buffer: $0) } == "f")
        #expect(splitter.finish() == nil)
        #expect(throws: NearbyError.self) { try splitter.append(ByteBuffer(string: "123456789")) }
        var other = LineSplitter(limit: 8)
        #expect(throws: NearbyError.self) { try other.append(ByteBuffer(string: "1234\n123456789\n")) }
    }
}
