import Testing

@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

/// The pure parts of `browse --types`, `browse --service _x._tcp` and `doctor`.
@Suite struct DoctorTests {
    /// A D-Bus refusal names avahi's policy file where this system has it (Debian 12:
    /// /usr/share/dbus-1/system.d; older: /etc/dbus-1/system.d), both when neither is there.
    @Test func theDBusPolicyIsNamedWhereItIs() {
        let debian12 = "/usr/share/dbus-1/system.d/avahi-dbus.conf", older = "/etc/dbus-1/system.d/avahi-dbus.conf"
        #expect(AvahiPolicy.files(exists: { $0 == debian12 }) == debian12)
        #expect(AvahiPolicy.files(exists: { $0 == older }) == older)
        #expect(AvahiPolicy.files(exists: { _ in true }) == "\(debian12) and \(older)")
        #expect(AvahiPolicy.files(exists: { _ in false }) == "\(debian12) or \(older)")
        // The sentence and doctor's hint name what this machine has.
        let here = AvahiPolicy.files()
        let sentence = NearbyError.daemonUnavailable(code: NearbyError.accessRefused).errorDescription ?? ""
        #expect(sentence.contains("its D-Bus policy (\(here)) does not allow it"), "\(sentence)")
        #expect(sentence.contains(debian12), "\(sentence)")
        #expect(DoctorCheck.accessHint.hasSuffix(here), "\(DoctorCheck.accessHint)")
    }

    @Test func fullDNSSDTypesAreToldFromMPCServiceNames() {
        #expect(DNSSDType.parse("_http._tcp") == "_http._tcp")
        #expect(DNSSDType.parse("_ipp._tcp.local.") == "_ipp._tcp")
        #expect(DNSSDType.parse("_ipp._tcp.") == "_ipp._tcp")
        #expect(DNSSDType.parse("_sleep-proxy._udp") == "_sleep-proxy._udp")
        // The old meaning of --service stays: an MPC name is not a DNS-SD type.
        #expect(DNSSDType.parse("nearby") == nil)
        #expect(DNSSDType.parse("chat-v2") == nil)
        #expect(DNSSDType.parse("_http") == nil)
        #expect(DNSSDType.parse("_http._sctp") == nil)
        #expect(DNSSDType.parse("http._tcp") == nil)
        #expect(DNSSDType.parse("_._tcp") == nil)
        #expect(DNSSDType.parse("_a b._tcp") == nil)
        #expect(DNSSDType.parse("_-x._tcp") == nil)
        #expect(DNSSDType.parse("_" + String(repeating: "a", count: 64) + "._tcp") == nil)
    }

    @Test func metaQueryAnswersBecomeTypes() {
        #expect(DNSSDType.fromMetaAnswer(name: "_http", type: "_tcp.") == "_http._tcp")
        #expect(DNSSDType.fromMetaAnswer(name: "_http", type: "_tcp.local.") == "_http._tcp")
        #expect(DNSSDType.fromMetaAnswer(name: "bogus", type: "_tcp.") == nil)
    }

    @Test func anInstanceCountsOnceWhileAnyReportStands() {
        var counter = TypeCounter()
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: true) == 1)
        // The same instance over IPv6 and on a second interface: no change.
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: true) == nil)
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: true) == nil)
        #expect(counter.apply(type: "_http._tcp", instance: "api", added: true) == 2)
        #expect(counter.apply(type: "_ipp._tcp", instance: "printer", added: true) == 1)
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: false) == nil)
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: false) == nil)
        #expect(counter.apply(type: "_http._tcp", instance: "web", added: false) == 1)
        // A removal nobody announced changes nothing and never goes negative.
        #expect(counter.apply(type: "_http._tcp", instance: "ghost", added: false) == nil)
        #expect(counter.count("_http._tcp") == 1)
        #expect(counter.count("_ipp._tcp") == 1)
        #expect(counter.count("_none._tcp") == 0)
    }

    @Test func theRunEndsWithTheFirstFailuresStatus() {
        let ok = DoctorCheck("daemon", .ok, "fine")
        let warn = DoctorCheck("responders", .warn, "alone", hint: DoctorCheck.multicastHint)
        let notFound = DoctorCheck("peer", .fail, "not found", exitStatus: .peerNotFound)
        let noPort = DoctorCheck("connect", .fail, "dropped", exitStatus: .connectionFailed)
        #expect(DoctorCheck.exitStatus(of: [ok, warn]) == .success)
        #expect(DoctorCheck.exitStatus(of: [ok, notFound, noPort]) == .peerNotFound)
        #expect(DoctorCheck.exitStatus(of: [ok, warn, noPort]) == .connectionFailed)
        // An ok or warn never carries a failing status, whatever it was built with.
        #expect(DoctorCheck("x", .warn, "y", exitStatus: .daemonUnavailable).exitStatus == .success)
        let summary = Events.Summary([ok, warn, notFound, noPort])
        #expect((summary.ok, summary.warn, summary.fail, summary.exitStatus) == (1, 1, 2, 2))
    }

    @Test func interfacesNeedOneUpWithMulticast() {
        let loopback = NetworkInterface(name: "lo", up: true, multicast: false, loopback: true, addresses: ["127.0.0.1"])
        let down = NetworkInterface(name: "eth0", up: false, multicast: true, loopback: false, addresses: ["10.0.0.2"])
        let noMulticast = NetworkInterface(name: "wg0", up: true, multicast: false, loopback: false, addresses: ["10.9.0.1"])
        let good = NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: ["10.99.0.1", "fe80::1"])
        #expect(NetworkInterface.check([loopback], daemonConfig: nil).status == .fail)
        #expect(NetworkInterface.check([loopback, down, noMulticast], daemonConfig: nil).status == .fail)
        let fine = NetworkInterface.check([loopback, good], daemonConfig: nil)
        #expect(fine.status == .ok)
        #expect(fine.detail.contains("nb0 (up, multicast): 10.99.0.1 fe80::1"))
        let config = "[server]\n#allow-interfaces=eth9\nallow-interfaces = eth0\ndeny-interfaces=\n"
        #expect(NetworkInterface.interfaceRestrictions(config) == ["allow-interfaces=eth0"])
        let restricted = NetworkInterface.check([good], daemonConfig: config)
        #expect(restricted.status == .warn)
        #expect(restricted.detail.contains("allow-interfaces=eth0"))
    }

    @Test func rawTXTKeepsEveryEntryAsPublished() {
        let entries = ["path=/x", "_d=Anna", "flag", "path=/second", "__hidden=1"]
        var wire: [UInt8] = []
        for entry in entries { wire += [UInt8(entry.utf8.count)] + Array(entry.utf8) }
        let record = TXTRecord.decode(wire)
        #expect(record.raw == ["path": "/x", "_d": "Anna", "flag": "", "__hidden": "1"])
        #expect(record.displayName == "Anna")
    }

    @Test func firewallRulesDroppingMDNSAreNamed() {
        #expect(FirewallRules.check(ruleset: nil).status == .ok)
        // An ordinary user cannot list the rules: said, with the way to have them read.
        #expect(FirewallRules.check(ruleset: nil, asRoot: false).detail.contains("readable only by root"))
        #expect(FirewallRules.check(ruleset: nil, asRoot: false).detail.contains("sudo"))
        #expect(FirewallRules.check(ruleset: nil, asRoot: true).detail.contains("nft missing"))
        #expect(FirewallRules.check(ruleset: "table inet f {\n chain input {\n tcp dport 22 accept\n }\n}").status == .ok)
        let dropped = FirewallRules.check(ruleset: "table inet f {\n chain input {\n  udp dport 5353 drop\n }\n}")
        #expect(dropped.status == .warn)
        #expect(dropped.detail.contains("udp dport 5353 drop"))
    }

    @Test func multicastHintsNameTheRuleTheFirewallCheckFound() {
        let rules = FirewallRules.dropping("table inet f {\n chain input {\n  udp dport 5353 drop\n  tcp dport 22 accept\n }\n}")
        #expect(rules == ["udp dport 5353 drop"])
        let hint = DoctorCheck.multicastHint(firewall: rules, otherwise: "check allow-interfaces")
        #expect(hint.contains("'udp dport 5353 drop'") && !hint.contains("allow-interfaces"))
        #expect(DoctorCheck.multicastHint(firewall: [], otherwise: "check allow-interfaces") == "check allow-interfaces")
        #expect(DoctorCheck.multicastHint(firewall: ["a 5353 drop", "b 5353 reject"], otherwise: "").contains("1 more"))
    }

    @Test func anAddressIsOnOneOfOurSubnetsOrBehindARouter() {
        #expect(Subnets.contains("10.99.0.2/24", "10.99.0.200"))
        #expect(!Subnets.contains("10.99.0.2/24", "10.98.0.2"))
        #expect(Subnets.contains("10.0.0.1/8", "10.255.1.1") && !Subnets.contains("10.0.0.1/8", "11.0.0.1"))
        #expect(Subnets.contains("2001:db8::1/64", "2001:db8::ffff") && !Subnets.contains("2001:db8::1/64", "2001:db9::1"))
        #expect(!Subnets.contains("10.99.0.2/24", "2001:db8::1") && !Subnets.contains("garbage", "10.99.0.1"))
        #expect(Subnets.network("10.99.0.2/24") == "10.99.0.0/24")
        #expect(Subnets.network("192.168.7.130/25") == "192.168.7.128/25")
        let nb0 = NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: ["10.99.0.1", "fe80::1"],
                                   networks: ["10.99.0.1/24", "fe80::1/64"])
        let lo = NetworkInterface(name: "lo", up: true, multicast: false, loopback: true, addresses: ["127.0.0.1"], networks: ["127.0.0.1/8"])
        #expect(Subnets.ours([lo, nb0]) == ["10.99.0.0/24 on nb0"])
        let near = Subnets.check(host: "10.99.0.7", port: 4000, interfaces: [lo, nb0])
        #expect(near?.status == .ok && near?.detail.contains("10.99.0.0/24 (nb0)") == true)
        let far = Subnets.check(host: "10.98.0.2", port: 4000, interfaces: [lo, nb0])
        #expect(far?.status == .warn && far?.name == "subnet")
        #expect(far?.detail.contains("10.98.0.2 is on none of this host's subnets (10.99.0.0/24 on nb0)") == true)
        #expect(far?.detail.contains("mDNS does not cross routers") == true)
        #expect(far?.hint?.contains("'\(Spelling.command(.invite, "10.98.0.2:4000"))'") == true)
        #expect(Subnets.check(host: "fe80::9%nb0", port: 4000, interfaces: [nb0])?.status == .ok)
        #expect(Subnets.check(host: "pi.local", port: 4000, interfaces: [nb0]) == nil)
        #expect(Subnets.notFoundHint([lo, nb0]).contains("(this host is on 10.99.0.0/24 on nb0), mDNS does not cross routers"))
    }

    /// Link-local is all of fe80::/10, not only the addresses whose text starts with fe80: fe90::
    /// and febf:: are on this link too (the doctor, the order addresses are tried in, the web page).
    @Test func linkLocalIsAllOfFe80Slash10() {
        for address in ["fe80::1", "FE80::1%nb0", "fe90::1", "febf::ffff", "fea0::2%3"] { #expect(Subnets.isLinkLocal(address), "\(address)") }
        for address in ["fec0::1", "fe7f::1", "2001:db8::1", "10.99.0.1", "fe80", "garbage"] { #expect(!Subnets.isLinkLocal(address), "\(address)") }
        let nb0 = NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: ["10.99.0.1", "febf::1"],
                                   networks: ["10.99.0.1/24", "febf::1/64"])
        #expect(Subnets.ours([nb0]) == ["10.99.0.0/24 on nb0"])
        #expect(Subnets.check(host: "fe90::9%nb0", port: 4000, interfaces: [nb0])?.status == .ok)
        #expect(PeerAddresses.connectionOrder(["fe90::1", "2001:db8::1", "10.99.0.1"]) == ["10.99.0.1", "2001:db8::1", "fe90::1"])
    }
}
