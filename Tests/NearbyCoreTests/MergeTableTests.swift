import Testing
@testable import NearbyCore
@testable import NearbyDiscovery

@Suite struct MergeTableTests {
    func peer(_ id: String, domain: String?, addresses: [String]) -> DiscoveredPeer {
        var peer = DiscoveredPeer(
            instance: id, txt: TXTRecord(displayName: "Ann", info: [:], protocolVersion: "2"), host: domain == nil ? "h.local." : "nearby-\(id).lab.test.",
            port: 4000, addresses: addresses, interface: domain == nil ? "eth0" : nil, elapsed: .zero)
        peer.domain = domain
        return peer
    }

    @Test func onePeerInTwoPlacesIsFoundOnceWithItsAddressesMergedAndLostWithTheLast() {
        var table = MergeTable()
        let onLink = peer("a", domain: nil, addresses: ["10.0.0.1"])
        let inDomain = peer("a", domain: "lab.test.", addresses: ["10.0.0.1", "192.0.2.7"])
        #expect(table.apply(.found(onLink), from: 0) == [.found(onLink)])
        var both = onLink
        both.addresses = ["10.0.0.1", "192.0.2.7"]
        #expect(table.apply(.found(inDomain), from: 1) == [.updated(both, changed: ["addresses"])])
        #expect(table.apply(.updated(inDomain, changed: []), from: 1).isEmpty)
        #expect(table.apply(.lost(onLink), from: 0) == [.updated(inDomain, changed: ["port"])])
        #expect(table.apply(.lost(inDomain), from: 1) == [.lost(inDomain)])
        #expect(table.seen.isEmpty)
    }

    @Test func thePlaceThatFoundAPeerFirstNamesIt() {
        var table = MergeTable()
        let inDomain = peer("b", domain: "lab.test.", addresses: ["192.0.2.7"])
        let onLink = peer("b", domain: nil, addresses: ["192.0.2.7"])
        #expect(table.apply(.found(inDomain), from: 1) == [.found(inDomain)])
        #expect(table.apply(.found(onLink), from: 0).isEmpty)
        #expect(table.merged("b")?.domain == "lab.test.")
    }

    @Test func aFailureEndsTheMergedBrowse() {
        var table = MergeTable()
        #expect(table.apply(.failed(.daemonUnavailable(code: -65537)), from: 0) == [.failed(.daemonUnavailable(code: -65537))])
        #expect(table.failed)
    }
}
