import Foundation
import Testing

@testable import NearbyBase
@testable import NearbyDiscovery

/// The verdicts of multicast-path, ghost, addresses and conflicts, from what the probes showed.
@Suite struct DoctorMDNSVerdictTests {
    static let bob = MDNSQuestion.Answer(source: "10.99.0.2", hosts: ["h2.local"], instances: ["abc123"], instanceHost: "h2.local")

    static func path(_ outcome: MDNSQuestion.Outcome, sees: Bool? = true, explained: String? = nil) -> DoctorCheck {
        DoctorCheck.multicastPath(outcome, peer: "Bob", address: "10.99.0.2", registrationType: "_chat._tcp", daemonSees: sees,
                                  explained: explained, byAddress: "10.99.0.2:4242")
    }

    @Test func multicastFilteredBetweenTheHostsIsNamedAsSuch() {
        let filtered = Self.path(MDNSQuestion.Outcome(unicast: Self.bob, multicast: nil, multicastSent: true, waited: .seconds(2)))
        #expect(filtered.name == "multicast-path" && filtered.status == .fail, "\(filtered)")
        #expect(filtered.detail.hasPrefix("multicast is filtered between this host and Bob: its responder at 10.99.0.2 answers a question sent to it directly"), "\(filtered.detail)")
        #expect(filtered.detail.contains("224.0.0.251") && filtered.detail.contains("from its cache"), "\(filtered.detail)")
        #expect(!filtered.detail.contains("not found") && !filtered.detail.contains("daemon does not"), "\(filtered.detail)")
        #expect(filtered.hint?.contains("client (AP) isolation") == true && filtered.hint?.contains("IGMP") == true)
        #expect(filtered.hint?.contains("10.99.0.2:4242'") == true, "\(filtered.hint ?? "")")
        // Its multicast does not reach this host's daemon either.
        let notSeen = Self.path(MDNSQuestion.Outcome(unicast: Self.bob, multicast: nil, multicastSent: true, waited: .seconds(2)), sees: false)
        #expect(notSeen.detail.contains("none of its announcements reach this host's daemon either"), "\(notSeen.detail)")
        // Our multicast reaches it, its own does not reach us.
        let oneWay = Self.path(MDNSQuestion.Outcome(unicast: Self.bob, multicast: Self.bob, multicastSent: true, waited: .seconds(2)), sees: false)
        #expect(oneWay.status == .fail && oneWay.detail.hasPrefix("multicast from Bob does not reach this host"), "\(oneWay.detail)")
    }

    @Test func bothAnswersAreOK() {
        let ok = Self.path(MDNSQuestion.Outcome(unicast: Self.bob, multicast: Self.bob, multicastSent: true, waited: .milliseconds(30)))
        #expect(ok.status == .ok && ok.detail.contains("host h2.local, 1 instance of _chat._tcp"), "\(ok)")
        // Nothing advertised to compare with the daemon: multicast still passes.
        let quiet = Self.path(MDNSQuestion.Outcome(unicast: Self.bob, multicast: Self.bob, multicastSent: true, waited: .milliseconds(30)), sees: nil)
        #expect(quiet.status == .ok)
    }

    @Test func noAnswerAtAllIsTheRespondersOrUnicast() {
        let down = Self.path(MDNSQuestion.Outcome(unicast: nil, multicast: nil, multicastSent: true, waited: .seconds(2)))
        #expect(down.status == .fail && down.detail.contains("its responder is down, or unicast to UDP 5353 is blocked"), "\(down.detail)")
        let cut = Self.path(MDNSQuestion.Outcome(unicast: nil, multicast: nil, multicastSent: true, waited: .milliseconds(200), cut: true))
        #expect(cut.status == .warn && cut.detail.hasPrefix("not checked"), "\(cut)")
        let explained = Self.path(MDNSQuestion.Outcome(unicast: nil, multicast: nil, multicastSent: false, waited: .zero), explained: "another subnet")
        #expect(explained.status == .skip && explained.exitStatus == .success)
        var unsent = MDNSQuestion.Outcome(unicast: nil, multicast: nil, multicastSent: false, waited: .zero)
        unsent.failure = "no route to that network"
        let notAsked = Self.path(unsent)
        #expect(notAsked.status == .warn && notAsked.detail.hasPrefix("could not ask Bob's responder"), "\(notAsked)")
        let unicastBlocked = Self.path(MDNSQuestion.Outcome(unicast: nil, multicast: Self.bob, multicastSent: true, waited: .seconds(2)))
        #expect(unicastBlocked.status == .warn)
    }

    @Test func aGhostIsListedButAnswersNothing() {
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        let silent = MDNSQuestion.Outcome(unicast: nil, multicast: nil, multicastSent: true, waited: .seconds(2))
        let ghost = DoctorCheck.ghost(
            listed: true, peer: "Bob", address: "10.99.0.2", port: 4242, outcome: silent, connected: false,
            connectReason: "10.99.0.2: refused the connection", lastHeard: nil, since: since, now: since.addingTimeInterval(3))
        #expect(ghost?.status == .fail && ghost?.exitStatus == .peerNotFound)
        #expect(ghost?.detail.hasPrefix("Bob is a ghost: this host's daemon still lists it at 10.99.0.2, but nothing answers there") == true, "\(ghost?.detail ?? "")")
        #expect(ghost?.detail.contains("not heard from since doctor began looking 3 s ago") == true, "\(ghost?.detail ?? "")")
        let heard = DoctorCheck.ghost(
            listed: true, peer: "Bob", address: "10.99.0.2", port: 4242, outcome: silent, connected: false, connectReason: nil,
            lastHeard: since.addingTimeInterval(-60), since: since)
        #expect(heard?.detail.contains("last heard 2027-01-15T07:59:00Z (recent-peers)") == true, "\(heard?.detail ?? "")")
        // It answers something: not a ghost.
        let alive = DoctorCheck.ghost(listed: true, peer: "Bob", address: "10.99.0.2", port: 4242, outcome: silent, connected: true, connectReason: nil, lastHeard: nil, since: since)
        #expect(alive?.status == .ok)
        #expect(DoctorCheck.ghost(listed: false, peer: "Bob", address: "10.99.0.2", port: 4242, outcome: silent, connected: false, connectReason: nil, lastHeard: nil, since: since) == nil)
    }

    static let lan = [NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: ["10.99.0.1"], networks: ["10.99.0.1/24"])]

    @Test func unreachableAddressesAreNamedWithTheirRange() {
        #expect(DoctorCheck.rangeName("172.17.0.2") == "docker's default bridge (docker0)")
        #expect(DoctorCheck.rangeName("172.20.1.1") == "the private range docker gives its networks (br-*)")
        #expect(DoctorCheck.rangeName("100.101.102.103")?.contains("Tailscale") == true)
        #expect(DoctorCheck.rangeName("10.99.0.2") == nil)
        let check = DoctorCheck.addresses([
            DoctorCheck.AddressTrial(address: "10.99.0.2", failure: nil),
            DoctorCheck.AddressTrial(address: "172.17.0.2", failure: "network is unreachable"),
        ], peer: "Bob", port: 4242, interfaces: Self.lan)
        #expect(check.status == .warn, "\(check)")
        #expect(check.detail.contains("172.17.0.2 (docker's default bridge (docker0), on none of this host's subnets): network is unreachable"), "\(check.detail)")
        #expect(check.detail.hasSuffix("reachable: 10.99.0.2"), "\(check.detail)")
        #expect(check.hint?.contains("allow-interfaces=") == true)
        let ok = DoctorCheck.addresses([DoctorCheck.AddressTrial(address: "10.99.0.2", failure: nil)], peer: "Bob", port: 4242, interfaces: Self.lan)
        #expect(ok.status == .ok)
        let none = DoctorCheck.addresses([DoctorCheck.AddressTrial(address: "10.99.0.2", failure: "refused")], peer: "Bob", port: 4242, interfaces: Self.lan)
        #expect(none.status == .skip)
    }

    @Test func aRenamedHostIsAConflict() {
        let renamed = DoctorCheck.conflicts(current: "h1-2.local.", configured: "h1", configuredFrom: "host-name=h1 in /etc/avahi/avahi-daemon.conf")
        #expect(renamed.status == .fail, "\(renamed)")
        #expect(renamed.detail.hasPrefix("this host's daemon announces itself as h1-2.local, not h1.local as configured"), "\(renamed.detail)")
        #expect(renamed.hint?.contains("avahi-resolve -n h1.local") == true)
        #expect(DoctorCheck.conflicts(current: "h1.local", configured: "H1", configuredFrom: "x").status == .ok)
        // A name that only looks numbered, configured so: no conflict.
        #expect(DoctorCheck.conflicts(current: "web-2.local", configured: "web-2", configuredFrom: "x").status == .ok)
        #expect(DoctorCheck.conflicts(current: "web-2.local", configured: "db", configuredFrom: "x").status == .ok)
        #expect(DoctorCheck.conflicts(current: nil, configured: "h1", configuredFrom: "x").status == .skip)
    }

    @Test func anotherHostAnsweringForTheInstanceIsAConflict() {
        let squatter = MDNSQuestion.Answer(source: "10.99.0.9", hosts: ["evil.local"], instances: [], instanceHost: "evil.local")
        let check = DoctorCheck.conflicts(
            current: "h1.local", configured: "h1", configuredFrom: "x", instance: "abc123", peerHost: "h2.local.", others: [squatter, Self.bob])
        #expect(check.status == .fail && check.detail.contains("another host answers for abc123: 10.99.0.9 (host evil.local)"), "\(check.detail)")
        let alone = DoctorCheck.conflicts(current: "h1.local", configured: "h1", configuredFrom: "x", instance: "abc123", peerHost: "h2.local", others: [Self.bob])
        #expect(alone.status == .ok && alone.detail.contains("no other host answers for abc123"), "\(alone.detail)")
    }

    /// A split brain: a neighbour asked directly for this host's name answers with its own address.
    @Test func aNeighbourClaimingThisHostsNameIsASplitBrain() {
        let own = ["10.99.0.1", "fe80::1%nb0"]
        let h3 = MDNSQuestion.Claim(source: "10.99.0.3", addresses: ["fe80::3", "10.99.0.3"])
        let split = DoctorCheck.conflicts(
            current: "h1.local.", configured: "h1", configuredFrom: "x", claims: MDNSQuestion.Claims(name: "h1.local.", asked: 2, claims: [h3]), ownAddresses: own)
        #expect(split.status == .fail, "\(split)")
        #expect(split.detail.hasPrefix("a split brain: another host claims this host's name h1.local — 10.99.0.3 (h1.local at 10.99.0.3, fe80::3) answers"), "\(split.detail)")
        #expect(split.detail.contains("Multicast between this host and 10.99.0.3 is blocked, so neither daemon hears the other's claim"), "\(split.detail)")
        #expect(split.hint?.contains("host-name= in avahi-daemon.conf") == true && split.hint?.contains("nearby watch") == true, "\(split.hint ?? "")")
        // A second stack on this host answering with this host's own addresses, or this host's own
        // answer (by any address of it, zone or not): no split brain.
        let here = MDNSQuestion.Claim(source: "10.99.0.3", addresses: ["10.99.0.1", "FE80::1"])
        let mine = MDNSQuestion.Claim(source: "fe80::1%nb0", addresses: ["10.99.0.7"])
        let fine = DoctorCheck.conflicts(
            current: "h1.local", configured: "h1", configuredFrom: "x", claims: MDNSQuestion.Claims(name: "h1.local", asked: 4, claims: [here, mine]), ownAddresses: own)
        #expect(fine.status == .ok && fine.detail.hasSuffix("; none of the 4 neighbours asked directly claims h1.local"), "\(fine.detail)")
        let alone = DoctorCheck.conflicts(
            current: "h1.local", configured: "h1", configuredFrom: "x", claims: MDNSQuestion.Claims(name: "h1.local", asked: 0, claims: []), ownAddresses: own)
        #expect(alone.status == .ok && alone.detail.contains("no neighbour to ask for h1.local"), "\(alone.detail)")
        // Renamed and claimed: both said.
        let both = DoctorCheck.conflicts(
            current: "h1-2.local", configured: "h1", configuredFrom: "x", claims: MDNSQuestion.Claims(name: "h1-2.local", asked: 1, claims: [h3]), ownAddresses: own)
        #expect(both.status == .fail && both.detail.contains("renamed") && both.detail.contains("a split brain"), "\(both.detail)")
    }

    /// The neighbours asked: complete ARP entries on the multicast interfaces, answered link-local
    /// IPv6 ones with their zone.
    @Test func theNeighboursAskedAreTheAnsweredOnes() {
        let arp = """
            IP address       HW type     Flags       HW address            Mask     Device
            10.99.0.3        0x1         0x2         8a:1b:2c:3d:4e:5f     *        nb0
            10.99.0.9        0x1         0x0         00:00:00:00:00:00     *        nb0
            172.17.0.2       0x1         0x2         02:42:ac:11:00:02     *        docker0
            """
        #expect(Neighbours.answered(inTable: arp, on: ["nb0"]) == ["10.99.0.3"])
        #expect(Neighbours.answered(inTable: arp, on: nil) == ["10.99.0.3", "172.17.0.2"])
        let linkLocal: [UInt8] = [0xFE, 0x80] + Array(repeating: 0, count: 13) + [3]
        let global: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [3]
        let entries = [
            Neighbours.Entry(address: linkLocal, interfaceIndex: 7, state: .answered),
            Neighbours.Entry(address: linkLocal, interfaceIndex: 8, state: .answered),
            Neighbours.Entry(address: global, interfaceIndex: 7, state: .answered),
            Neighbours.Entry(address: linkLocal, interfaceIndex: 9, state: .silent),
        ]
        let names: (Int32) -> String? = { [7: "nb0", 8: "docker0", 9: "nb0"][$0] }
        #expect(Neighbours.answered(ipv6: entries, on: ["nb0"], name: names) == ["fe80::3%nb0"])
    }
}
