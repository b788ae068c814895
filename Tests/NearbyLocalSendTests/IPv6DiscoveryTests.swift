import NIOCore
import NearbyCore
import Testing
@testable import NearbyLocalSend

/// IPv6 discovery (issue 50, row IPv6): a link-local sender keeps its zone, a device on both
/// families does not flap between its addresses, and the group is the official app's.
@Suite struct IPv6DiscoveryTests {
    private func device(_ fingerprint: String, host: String) -> LocalSendDevice {
        LocalSendDevice(DeviceMessage(alias: "a", fingerprint: fingerprint), host: host, interface: nil)
    }

    @Test func theGroupIsTheOfficialApps() throws {
        // localsend 1.18, core/src/multicast/mod.rs: Ipv6Addr::new(0xff12, 0, 0, 0, 0, 0, 0xfd3a, 0xe420).
        let group = try SocketAddress(ipAddress: LocalSendDefaults.multicastGroupIPv6, port: LocalSendDefaults.port)
        guard case let .v6(v6) = group else { Issue.record("not IPv6"); return }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        #expect(bytes == [0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfd, 0x3a, 0xe4, 0x20])
    }

    @Test func aLinkLocalSenderKeepsItsZone() {
        let names: (UInt32) -> String? = { $0 == 3 ? "nb0" : nil }
        #expect(ScopedAddress.text("fe80::1", scope: 3, name: names) == "fe80::1%nb0")
        #expect(ScopedAddress.text("FE80::abcd", scope: 7, name: names) == "FE80::abcd%7")
        #expect(ScopedAddress.text("febf::1", scope: 3, name: names) == "febf::1%nb0")
        // Not link-local, or no scope: as it is.
        #expect(ScopedAddress.text("2001:db8::1", scope: 3, name: names) == "2001:db8::1")
        #expect(ScopedAddress.text("fe80::1", scope: 0, name: names) == "fe80::1")
        #expect(ScopedAddress.text("fec0::1", scope: 3, name: names) == "fec0::1")
        #expect(ScopedAddress.text("10.0.0.2", scope: 3, name: names) == "10.0.0.2")
        // A name no interface could have is not written.
        #expect(ScopedAddress.text("fe80::1", scope: 4, name: { _ in String(repeating: "x", count: 40) }) == "fe80::1%4")
    }

    @Test func aScopedAddressIsWrittenAsAURLHost() {
        #expect(ScopedAddress.authority("10.0.0.2", port: 53317) == "10.0.0.2:53317")
        #expect(ScopedAddress.authority("fe80::1%nb0", port: 53317) == "[fe80::1%25nb0]:53317")
        #expect(ScopedAddress.authority("2001:db8::1", port: 1) == "[2001:db8::1]:1")
    }

    @Test func theAddressOfAConnectionIsWrittenAsDiscoveryWritesIt() throws {
        #expect(ScopedAddress.of(try SocketAddress(ipAddress: "::ffff:10.0.0.2", port: 1)) == "10.0.0.2")
        #expect(ScopedAddress.of(try SocketAddress(ipAddress: "10.0.0.2", port: 1)) == "10.0.0.2")
        guard case let .v6(v6) = try SocketAddress(ipAddress: "fe80::1", port: 1) else { return }
        var raw = v6.address
        raw.sin6_scope_id = 1
        let named = ScopedAddress.interfaceName(1).map { "fe80::1%" + $0 } ?? "fe80::1%1"
        #expect(ScopedAddress.of(SocketAddress(raw, host: "")) == named)
        #expect(ScopedAddress.of(nil) == "unknown")
    }

    @Test func aDeviceOnBothFamiliesStaysAtItsIPv4AddressWhileThatIsHeard() {
        var table = DeviceTable(ownFingerprint: "me", lifetime: .seconds(10))
        let start = ContinuousClock.now
        #expect(table.heard(device("x", host: "10.0.0.2"), at: start) == .found(device("x", host: "10.0.0.2")))
        // Its announcement on the IPv6 group, at once and every time after: nothing to report.
        for second in 0..<8 {
            #expect(table.heard(device("x", host: "fe80::2%nb0"), at: start + .seconds(second)) == nil)
            #expect(table.heard(device("x", host: "10.0.0.2"), at: start + .seconds(second)) == nil)
        }
        #expect(table.devices.first?.host == "10.0.0.2")
        // Its IPv4 address gone, IPv6 alone is heard: it moves there, once.
        let moved = table.heard(device("x", host: "fe80::2%nb0"), at: start + .seconds(19))
        #expect(moved == .updated(device("x", host: "fe80::2%nb0"), changed: ["addresses"]))
        #expect(table.heard(device("x", host: "fe80::2%nb0"), at: start + .seconds(20)) == nil)
        // Heard over IPv4 again: back there.
        #expect(table.heard(device("x", host: "10.0.0.2"), at: start + .seconds(21)) == .updated(device("x", host: "10.0.0.2"), changed: ["addresses"]))
    }

    @Test func aDeviceOnlyOnIPv6IsFoundThereAndLostLikeAnyOther() {
        var table = DeviceTable(ownFingerprint: "me", lifetime: .seconds(10))
        let start = ContinuousClock.now
        #expect(table.heard(device("y", host: "fe80::3%nb0"), at: start) == .found(device("y", host: "fe80::3%nb0")))
        #expect(table.expire(at: start + .seconds(11)) == [device("y", host: "fe80::3%nb0")])
    }

    @Test func manyIPv6DevicesFillAtMostTheCapacity() {
        // An IPv6 host has addresses to spare: the table's cap holds whatever the source.
        var table = DeviceTable(ownFingerprint: "me", capacity: 64)
        let now = ContinuousClock.now
        var found = 0
        for index in 0..<5_000 {
            if case .found = table.heard(device("fake\(index)", host: "fe80::\(String(index, radix: 16))%nb0"), at: now) { found += 1 }
        }
        #expect(found == 64)
        #expect(table.count == 64)
    }

    @Test func anIPv6AddressIsTakenAsAnAddressToSendTo() {
        let parsed = LocalSendTarget.address("[fe80::1%nb0]:53317")
        #expect(parsed?.host == "fe80::1%nb0")
        #expect(parsed?.port == 53317)
    }
}
