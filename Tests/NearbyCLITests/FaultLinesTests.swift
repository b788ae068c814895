import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyBase

/// What a person sees of issue 41's events: the lookup that names what was meant and how long it
/// goes on, a transfer waiting for its link, and the file going on.
@Suite struct FaultLinesTests {
    private let renderer = HumanRenderer(color: false, timeZone: TimeZone(identifier: "UTC") ?? .current)
    private let bob = PeerRef(id: "3hx5hctom3pdm", name: "Bob's Pi")
    private let at = Date(timeIntervalSince1970: 1_795_296_023.123)

    private func shown(_ body: some EventBody) -> String {
        guard let decoded = HumanRenderer.decode(EventEncoder().line(body, at: at)) else { return "undecodable" }
        #expect(decoded.body != nil, "\(type(of: body).event) did not decode as itself")
        return renderer.render(decoded)
    }

    @Test func stillLookingNamesTheNearNamesAndHowLongItGoesOn() {
        let line = shown(Events.Looking(peer: "bob", service: "_nearby._tcp", seconds: 2, near: [bob], remaining: 27.6))
        #expect(line.contains("still looking for 'bob'") && line.contains("for 28 s more"), "\(line)")
        #expect(line.contains("near: Bob's Pi (3hx5hctom3pdm)"), "\(line)")
        // From an older node: no near names, no time left — the line as before.
        #expect(shown(Events.Looking(peer: "bob", service: "_nearby._tcp", seconds: 2)).hasSuffix("on _nearby._tcp…"))
    }

    @Test func reconnectingAndResumedSayWhereTheFileStands() {
        let waiting = shown(Events.Reconnecting(
            peer: bob, path: "big.bin", attempt: 3, after: 0.5, seconds: 12.4, retryFor: 120, reason: "connection lost (nothing heard for 6 s)"))
        #expect(waiting.contains("reconnecting to Bob's Pi for big.bin (attempt 3, outage 12 s of 120 s)"), "\(waiting)")
        let resumed = shown(Events.Resumed(transfer: "t", peer: bob, path: "big.bin", offset: 5 << 20, bytes: 16 << 20, attempts: 3, seconds: 21.25))
        #expect(resumed.contains("resumed big.bin to Bob's Pi at") && resumed.contains("after 3 attempts"), "\(resumed)")
    }
}
