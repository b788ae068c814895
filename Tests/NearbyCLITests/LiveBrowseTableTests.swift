import Testing
@testable import NearbyCLI
@testable import NearbyBase
@testable import NearbyDiscovery

/// `browse --live`'s table: found, updated and lost drawn as a person reads them, hosts gathered
/// with every address per interface, a lost peer kept a while then gone, and a flood bounded.
@Suite struct LiveBrowseTableTests {
    static func peer(_ instance: String, _ name: String?, host: String? = "h2.local.", addresses: [String] = ["10.99.0.2"],
                     interface: String? = "nb0", info: [String: String] = [:]) -> DiscoveredPeer {
        DiscoveredPeer(
            instance: instance, txt: TXTRecord(displayName: name, info: info, protocolVersion: "2"), host: host, port: 39339,
            addresses: addresses, interface: interface, elapsed: .zero)
    }

    @Test func foundUpdatedAndLostAsAPersonReadsThem() {
        var table = LiveBrowseTable()
        let bob = Self.peer("bobid0000000", "Bob", info: ["room": "lab"])
        table.apply(.found(bob), now: 100)
        table.apply(.found(Self.peer("carolid00000", "Carol", host: "h3.local.", addresses: ["10.99.0.3"])), now: 101)
        var moved = bob
        moved.addresses = ["10.99.0.2", "fe80::2"]
        table.apply(.updated(moved, changed: ["addresses"]), now: 103)
        table.apply(.lost(Self.peer("carolid00000", "Carol", host: "h3.local.")), now: 104)
        let lines = table.lines(now: 105, service: "_nearby._tcp")
        #expect(lines.first == "PEERS 1 on _nearby._tcp, 1 lost")
        let bobRow = lines.first { $0.contains("Bob (bobid000)") } ?? ""
        #expect(bobRow.contains("h2.local.:39339") && bobRow.contains("room=lab") && bobRow.contains("found 5s ago, addresses 2s ago"))
        #expect(lines.contains { $0.contains("Carol (carolid0)") && $0.contains("lost 1s ago") })
        // Hosts: only the peers still here, every address on its interface.
        #expect(lines.contains("HOSTS 1"))
        #expect(lines.contains { $0.hasPrefix("  h2.local.") && $0.contains("10.99.0.2 fe80::2 (nb0)") && $0.hasSuffix("1 peer") })
        #expect(!lines.contains { $0.hasPrefix("  h3.local.") })
    }

    /// The host row keeps one order however the daemon's answers arrive (IPv4, IPv6, link-local:
    /// the order connections try them), so it does not reorder under a reader's eyes; CI once saw
    /// the link-local AAAA answered first.
    @Test func aHostsAddressesKeepTheConnectionOrderWhateverArrivesFirst() {
        var table = LiveBrowseTable()
        table.apply(.found(Self.peer("bobid0000000", "Bob", addresses: ["fe80::2%nb0", "2001:db8::2", "10.99.0.2"])), now: 1)
        let row = table.lines(now: 1, service: "_nearby._tcp").first { $0.hasPrefix("  h2.local.") } ?? ""
        #expect(row.contains("10.99.0.2 2001:db8::2 fe80::2%nb0 (nb0)"))
    }

    @Test func aLostPeerStaysTheLingerThenGoes() {
        var table = LiveBrowseTable()
        let bob = Self.peer("bobid0000000", "Bob")
        table.apply(.found(bob), now: 0)
        table.apply(.lost(bob), now: 1)
        table.expire(now: 1 + LiveBrowseTable.linger)
        #expect(table.entries.count == 1)
        table.expire(now: 2 + LiveBrowseTable.linger)
        #expect(table.entries.isEmpty)
        #expect(table.lines(now: 20, service: "_nearby._tcp").first == "PEERS 0 on _nearby._tcp")
        // Found again: a row again.
        table.apply(.found(bob), now: 30)
        #expect(table.lines(now: 30, service: "_nearby._tcp").contains { $0.contains("Bob") && $0.contains("found 0s ago") })
    }

    @Test func aFloodOfPeersIsCountedNotKept() {
        var table = LiveBrowseTable()
        for index in 0..<(LiveBrowseTable.capacity + 40) {
            table.apply(.found(Self.peer("peer\(index)", "P\(index)", host: "h\(index).local.")), now: 1)
        }
        #expect(table.entries.count == LiveBrowseTable.capacity)
        #expect(table.overflow == 40)
        let lines = table.lines(now: 2, service: "_nearby._tcp")
        #expect(lines.first == "PEERS \(LiveBrowseTable.capacity) on _nearby._tcp (40 more not kept)")
        #expect(lines.contains("  … \(LiveBrowseTable.capacity - 20) more"))
        #expect(lines.count < 40, "the table is a screen, not a list of everything")
    }

    @Test func namesThatWouldActOnATerminalAreShownEscaped() {
        var table = LiveBrowseTable()
        table.apply(.found(Self.peer("evil", "Mallory\u{1b}[2J\u{202E}", host: "h\u{7}.local.")), now: 1)
        let lines = table.lines(now: 1, service: "_nearby._tcp")
        #expect(!lines.joined().unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{202E}" || $0 == "\u{7}" })
        #expect(BrowseScreen.words(.found(Self.peer("evil", "a\u{1b}b")), at: 0).map { !$0.contains("\u{1b}") } == true)
    }
}
