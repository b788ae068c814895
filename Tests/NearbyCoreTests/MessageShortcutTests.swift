import NIOCore
import NIOEmbedded
import Testing
@testable import NearbyCore
@testable import NearbyWire
import NearbyBase

/// Messages delivered on the event loop: only when armed, only while nothing passed up before them
/// waits for the node, so events keep the order of the frames on the wire.
@Suite struct MessageShortcutTests {
    private final class Delivered: Sendable {
        let texts = Locked<[String]>([])
        func add(_ bytes: [UInt8]) { texts.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        var all: [String] { texts.withLock { $0 } }
    }

    private func message(_ text: String) -> Frame { Frame(kind: .message, payload: ByteBuffer(string: text)) }

    private func passedUp(_ channel: EmbeddedChannel) throws -> [String] {
        var kinds: [String] = []
        while let frame = try channel.readInbound(as: Frame.self) {
            kinds.append(frame.kind == .message ? String(buffer: frame.payload) : "\(frame.kind)")
        }
        return kinds
    }

    @Test func unarmedEveryFrameGoesUp() throws {
        let shortcut = MessageShortcut()
        let channel = EmbeddedChannel(handler: MessageShortcutHandler(shortcut))
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeInbound(message("before the session"))
        try channel.writeInbound(Frame(kind: .ping))
        #expect(try passedUp(channel) == ["before the session", "ping"])
    }

    @Test func armedMessagesStayOnTheLoopUntilAnotherFrameWaitsForTheNode() throws {
        let shortcut = MessageShortcut()
        let delivered = Delivered()
        let channel = EmbeddedChannel(handler: MessageShortcutHandler(shortcut))
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        // The handshake's frames go up uncounted: the handshake reads them itself.
        try channel.writeInbound(Frame(kind: .hello))
        try channel.writeInbound(Frame(kind: .auth))
        shortcut.arm { delivered.add($0) }
        try channel.writeInbound(message("one"))
        try channel.writeInbound(message("two"))
        #expect(delivered.all == ["one", "two"])
        // A frame for the node; the message after it must not overtake it.
        try channel.writeInbound(Frame(kind: .ping))
        try channel.writeInbound(message("three"))
        #expect(delivered.all == ["one", "two"])
        #expect(try passedUp(channel) == ["hello", "auth", "ping", "three"])
        shortcut.handled()  // the ping
        try channel.writeInbound(message("four"))
        #expect(delivered.all == ["one", "two"])  // "three" still waits for the node
        shortcut.handled()  // "three"
        shortcut.handled()  // "four"
        try channel.writeInbound(message("five"))
        #expect(delivered.all == ["one", "two", "five"])
        #expect(try passedUp(channel) == ["four"])
    }

    @Test func disarmedAtTheEndOfTheSessionMessagesGoUpAgain() throws {
        let shortcut = MessageShortcut()
        let delivered = Delivered()
        let channel = EmbeddedChannel(handler: MessageShortcutHandler(shortcut))
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        shortcut.arm { delivered.add($0) }
        try channel.writeInbound(message("in session"))
        shortcut.disarm()
        try channel.writeInbound(message("after goodbye"))
        #expect(delivered.all == ["in session"])
        #expect(try passedUp(channel) == ["after goodbye"])
    }
}
