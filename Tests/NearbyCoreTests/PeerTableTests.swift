import Testing
@testable import NearbyCore
@testable import NearbyDiscovery

@Suite struct PeerTableTests {
    let txt: [UInt8] = (try? TXTRecord(displayName: "bob", info: ["a": "1"], protocolVersion: "1").encode()) ?? []

    private func found(_ actions: [PeerTable.Action]) -> [PeerTable.Snapshot] {
        actions.compactMap { if case let .found(s) = $0 { s } else { nil } }
    }
    private func lost(_ actions: [PeerTable.Action]) -> [PeerTable.Snapshot] {
        actions.compactMap { if case let .lost(s) = $0 { s } else { nil } }
    }

    @Test func oneFoundAndOneLostAcrossFamiliesAndInterfaces() {
        var table = PeerTable()
        // Avahi: IPv4 and IPv6 report on interface 2, and interface 3 too.
        #expect(table.serviceAdded(instance: "p", interface: 2, at: .zero) == [.resolve(instance: "p", interface: 2)])
        #expect(table.serviceAdded(instance: "p", interface: 2, at: .zero).isEmpty)
        #expect(table.serviceAdded(instance: "p", interface: 3, at: .zero) == [.resolve(instance: "p", interface: 3)])
        let resolved = table.resolved(instance: "p", interface: 2, host: "h.local.", port: 9, txt: txt)
        #expect(resolved.contains(.queryAddresses(instance: "p", interface: 2, host: "h.local.")))
        #expect(resolved.contains(.settle(instance: "p", after: PeerTable.addressGiveUp)))
        #expect(table.addressChanged(instance: "p", address: "10.0.0.2", added: true) == [.settle(instance: "p", after: PeerTable.addressSettle)])
        // The second family completes the picture: announced at once, no need to wait.
        let announced = found(table.addressChanged(instance: "p", address: "fe80::1%e", added: true))
        #expect(announced.count == 1)
        #expect(announced.first?.addresses == ["10.0.0.2", "fe80::1%e"])
        #expect(announced.first?.txt.displayName == "bob")
        #expect(table.settled(instance: "p").isEmpty)  // the second timer finds it announced already
        // A second resolve on the other interface with the same data changes nothing visible.
        #expect(found(table.resolved(instance: "p", interface: 3, host: "h.local.", port: 9, txt: txt)).isEmpty)

        #expect(lost(table.serviceRemoved(instance: "p", interface: 2)).isEmpty)
        #expect(lost(table.serviceRemoved(instance: "p", interface: 2)).isEmpty)
        #expect(lost(table.serviceRemoved(instance: "p", interface: 3)).count == 1)
        #expect(table.count == 0)
        #expect(table.serviceRemoved(instance: "p", interface: 3).isEmpty)  // a stray remove is ignored
    }

    @Test func oneFamilyWaitsForTheSettleTimer() {
        var table = PeerTable()
        _ = table.serviceAdded(instance: "p", interface: 2, at: .zero)
        _ = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: txt)
        #expect(table.addressChanged(instance: "p", address: "10.0.0.2", added: true) == [.settle(instance: "p", after: PeerTable.addressSettle)])
        #expect(table.addressChanged(instance: "p", address: "10.0.0.3", added: true).isEmpty)
        #expect(found(table.settled(instance: "p")).first?.addresses == ["10.0.0.2", "10.0.0.3"])
    }

    @Test func lostBeforeAnnouncedIsSilent() {
        var table = PeerTable()
        _ = table.serviceAdded(instance: "p", interface: 2, at: .zero)
        _ = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: txt)
        #expect(lost(table.serviceRemoved(instance: "p", interface: 2)).isEmpty)
        #expect(table.settled(instance: "p").isEmpty)
    }

    @Test func txtChangeIsAnUpdate() throws {
        var table = PeerTable()
        _ = table.serviceAdded(instance: "p", interface: 2, at: .zero)
        _ = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: txt)
        _ = table.settled(instance: "p")
        let newTXT = try TXTRecord(displayName: "bob", info: ["a": "2"], protocolVersion: "1").encode()
        let actions = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: newTXT)
        guard case let .updated(snapshot, changed) = actions.last else {
            Issue.record("expected an update, got \(actions)")
            return
        }
        #expect(changed == ["info"])
        #expect(snapshot.txt.info == ["a": "2"])
        let renamed = try TXTRecord(displayName: "robert", info: ["a": "2"], protocolVersion: "1").encode()
        guard case let .updated(_, changedName) = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: renamed).last else {
            Issue.record("expected an update")
            return
        }
        #expect(changedName == ["name"])
    }

    @Test func noAddressStillAnnouncedAfterGiveUp() {
        var table = PeerTable()
        _ = table.serviceAdded(instance: "p", interface: 2, at: .zero)
        _ = table.resolved(instance: "p", interface: 2, host: "h", port: 1, txt: [])
        let announced = found(table.settled(instance: "p"))
        #expect(announced.first?.addresses == [])
        #expect(announced.first?.txt.protocolVersion == nil)  // an MPC app, as far as TXT says
    }

    @Test func daemonLossLosesAnnouncedPeers() {
        var table = PeerTable()
        for name in ["a", "b"] {
            _ = table.serviceAdded(instance: name, interface: 2, at: .zero)
            _ = table.resolved(instance: name, interface: 2, host: "h", port: 1, txt: txt)
        }
        _ = table.settled(instance: "a")
        #expect(lost(table.removeAll()).map(\.instance) == ["a"])
    }
}
