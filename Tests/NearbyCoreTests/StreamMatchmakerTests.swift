import Testing
@testable import NearbyCore
@testable import NearbyBase

/// Who gets which incoming stream, without sockets: the matchmaker's machine (`StreamMatching`)
/// fed offers, listeners and expiries by hand.
@Suite struct StreamMatchmakerTests {
    private typealias Stream = StreamMatching.Stream
    private typealias Listener = StreamMatching.Listener

    private static func machine(max: Int = 8) -> StreamMatching { StreamMatching(maxWaiting: max, listenerWait: .seconds(30)) }
    private static func stream(_ key: Int, _ name: String = "", from id: String = "4f1c0a99", named peer: String = "laptop") -> Stream {
        Stream(key: key, name: name, peerID: id, peerName: peer)
    }

    @Test func aStreamGoesToTheOldestListenerThatWantsIt() {
        var matching = Self.machine()
        #expect(matching.listening(Listener(key: 1, name: "logs", from: nil)) == .wait(listener: 1))
        #expect(matching.listening(Listener(key: 2, name: nil, from: "desktop")) == .wait(listener: 2))
        #expect(matching.listening(Listener(key: 3, name: nil, from: nil)) == .wait(listener: 3))
        // Not named "logs", not from desktop: the third.
        #expect(matching.offered(Self.stream(10, "video")) == .give(stream: 10, to: 3))
        #expect(matching.offered(Self.stream(11, "logs")) == .give(stream: 11, to: 1))
        // By ID prefix or display name.
        #expect(matching.offered(Self.stream(12, from: "9a0b", named: "desktop")) == .give(stream: 12, to: 2))
        #expect(matching.listeners.isEmpty)
    }

    @Test func aStreamWaitsForAListenerThatTakesTheOldestItWants() {
        var matching = Self.machine()
        #expect(matching.offered(Self.stream(1, "a")) == .hold(stream: 1, refuseAfter: .seconds(30)))
        #expect(matching.offered(Self.stream(2, "b")) == .hold(stream: 2, refuseAfter: .seconds(30)))
        #expect(matching.offered(Self.stream(3, "b")) == .hold(stream: 3, refuseAfter: .seconds(30)))
        #expect(matching.listening(Listener(key: 7, name: "b", from: nil)) == .give(stream: 2, to: 7))
        #expect(matching.listening(Listener(key: 8, name: nil, from: "someone-else")) == .wait(listener: 8))
        #expect(matching.waiting.map(\.key) == [1, 3])
    }

    @Test func onlySoManyWaitAndEachOnlySoLong() {
        var matching = Self.machine(max: 2)
        _ = matching.offered(Self.stream(1, "first"))
        _ = matching.offered(Self.stream(2))
        #expect(matching.offered(Self.stream(3)) == .refuse(stream: 3, reason: "too many streams waiting for a listener (at most 2)"))
        let listen = Spelling.command(.streamListen)
        #expect(matching.expired(1) == .refuse(stream: 1, reason: "nobody is listening for streams named 'first' (\(listen)); waited 30 s"))
        #expect(matching.expired(2) == .refuse(stream: 2, reason: "nobody is listening for streams (\(listen)); waited 30 s"))
        // Taken meanwhile, or refused already: nothing more to say.
        #expect(matching.expired(2) == nil)
        #expect(matching.offered(Self.stream(4)) == .hold(stream: 4, refuseAfter: .seconds(30)))
    }

    @Test func aListenerThatLeftAndAStreamWhoseLinkClosedAreForgotten() {
        var matching = Self.machine()
        _ = matching.listening(Listener(key: 1, name: "x", from: nil))
        matching.listenerLeft(1)
        #expect(matching.offered(Self.stream(5, "x")) == .hold(stream: 5, refuseAfter: .seconds(30)))
        _ = matching.offered(Self.stream(6, "x"))
        matching.drop([5])
        #expect(matching.expired(5) == nil)
        #expect(matching.listening(Listener(key: 2, name: "x", from: nil)) == .give(stream: 6, to: 2))
    }
}
