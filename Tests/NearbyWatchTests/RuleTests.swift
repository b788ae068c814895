import NearbyBase
import NearbyDNS
import Testing
@testable import NearbyWatch

/// Each rule on recorded-style packets: the fault named once, and the healthy look-alike not at all.
@Suite struct RuleTests {
    /// Runs `packets` (time, source, message[, interface]) through an engine; the findings.
    static func findings(_ packets: [(Double, String, DNSMessage, String?)], filter: WatchFilter = WatchFilter()) -> [Events.Finding] {
        var engine = WatchEngine(filter: filter)
        var found: [Events.Finding] = []
        for (time, source, message, interface) in packets {
            for output in engine.process(Make.datagram(message, from: source), time: time, interface: interface) {
                if case let .finding(finding) = output { found.append(finding) }
            }
        }
        return found
    }

    static let h1 = Make.response([Make.a("h1.local.", [10, 99, 0, 1])])

    @Test func conflictTwoHostsOneName() {
        let other = Make.response([Make.a("h1.local.", [10, 99, 0, 3])])
        let found = Self.findings([(0, "10.99.0.1", Self.h1, "nb0"), (1, "10.99.0.3", other, "nb0"), (2, "10.99.0.3", other, "nb0")])
        #expect(found.map(\.rule) == ["conflict"])
        #expect(found.first?.host == "10.99.0.3" && found.first?.name == "h1.local.")
        #expect(found.first?.evidence.contains("10.99.0.1") == true)
    }

    @Test func oneHostOverIPv4AndIPv6IsNoConflict() {
        let both = Make.response([Make.a("h1.local.", [10, 99, 0, 1]), Make.record("h1.local.", .aaaa, .aaaa([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]))])
        #expect(Self.findings([(0, "10.99.0.1", both, "nb0"), (0.01, "fe80::1", both, "nb0")]).isEmpty)
        // Shared records (no cache-flush: PTRs) from many hosts are no conflict either.
        let a = Make.response([Make.ptr("_http._tcp.local.", "a._http._tcp.local.")])
        let b = Make.response([Make.ptr("_http._tcp.local.", "b._http._tcp.local.")])
        #expect(Self.findings([(0, "10.0.0.1", a, nil), (1, "10.0.0.2", b, nil)]).isEmpty)
        // Nor is the same host name once its record expired.
        let later = Make.response([Make.a("h1.local.", [10, 99, 0, 3])])
        #expect(Self.findings([(0, "10.99.0.1", Self.h1, nil), (500, "10.99.0.3", later, nil)]).isEmpty)
    }

    @Test func renameAfterAConflict() {
        let renamed = Make.response([Make.a("h1-2.local.", [10, 99, 0, 1])])
        let found = Self.findings([(0, "10.99.0.1", Self.h1, nil), (5, "10.99.0.1", renamed, nil), (6, "10.99.0.1", renamed, nil)])
        #expect(found.map(\.rule) == ["rename"])
        #expect(found.first?.evidence.contains("h1.local. → h1-2.local.") == true)
        let beside = Make.response([Make.a("h1-2.local.", [10, 99, 0, 3])])
        #expect(Self.findings([(0, "10.99.0.1", Self.h1, nil), (5, "10.99.0.3", beside, nil)]).map(\.rule) == ["rename"])
        let service = Make.response([Make.srv("Printer #2._ipp._tcp.local.", port: 631, target: "h3.local.")])
        let first = Make.response([Make.srv("Printer._ipp._tcp.local.", port: 631, target: "h2.local.")])
        #expect(Self.findings([(0, "10.99.0.2", first, nil), (5, "10.99.0.3", service, nil)]).map(\.rule) == ["rename"])
        // A name with a dash of its own, alone, is no rename.
        #expect(Self.findings([(0, "10.0.0.5", Make.response([Make.a("web-1.local.", [10, 0, 0, 5])]), nil)]).isEmpty)
    }

    @Test func chattyQuerier() {
        let query = Make.query("_nearby._tcp.local.")
        let chatty = (0..<20).map { (Double($0) * 0.1, "10.99.0.3", query, Optional("nb0")) }
        let found = Self.findings(chatty)
        #expect(found.map(\.rule) == ["chatty-querier"])
        #expect(found.first?.evidence.contains("about every 100 ms") == true)
        // RFC 6762's back-off (1 s, 2 s, 4 s…) and a probe's 250 ms steps are fine.
        let polite = [0.0, 1, 3, 7, 15, 31].map { ($0, "10.99.0.3", query, Optional("nb0")) }
        #expect(Self.findings(polite).isEmpty)
        var probe = Make.query("h9.local.", .any)
        probe.authority = [Make.a("h9.local.", [10, 0, 0, 9])]
        #expect(Self.findings((0..<6).map { (Double($0) * 0.25, "10.0.0.9", probe, nil) }).isEmpty)
        // Two queriers asking once each: no one is chatty.
        #expect(Self.findings((0..<20).map { (Double($0) * 0.1, "10.0.0.\($0)", query, nil) }).isEmpty)
    }

    @Test func ttlOutOfRange() {
        let long = Make.response([Make.a("h5.local.", [10, 0, 0, 5], ttl: 86_400)])
        let found = Self.findings([(0, "10.0.0.5", long, nil), (1, "10.0.0.5", long, nil)])
        #expect(found.map(\.rule) == ["ttl"])
        #expect(found.first?.evidence.contains("120 s") == true)
        #expect(Self.findings([(0, "10.0.0.5", Make.response([Make.ptr("_x._tcp.local.", "a._x._tcp.local.", ttl: 2)]), nil)]).map(\.rule) == ["ttl"])
        // Goodbyes (0) and the RFC's own values are fine.
        let fine = Make.response([Make.ptr("_x._tcp.local.", "a._x._tcp.local.", ttl: 0), Make.a("a.local.", [1, 2, 3, 4]),
                                  Make.ptr("_y._tcp.local.", "b._y._tcp.local.")])
        #expect(Self.findings([(0, "10.0.0.5", fine, nil)]).isEmpty)
    }

    @Test func oversizeAndTruncated() {
        var engine = WatchEngine()
        var big = Make.response((0..<40).map { Make.record("t\($0)._x._tcp.local.", .txt, ttl: 4500, .txt([[UInt8](repeating: 0x61, count: 60)])) })
        let datagram = Make.datagram(big, from: "10.0.0.7")
        let outputs = engine.process(datagram, time: 0, interface: "nb0", payloadLimit: 1472)
        #expect(outputs.contains { if case let .finding(f) = $0 { f.rule == "oversize" } else { false } })
        big.answers = [Make.a("h7.local.", [10, 0, 0, 7])]
        big.truncated = true
        #expect(Self.findings([(0, "10.0.0.7", big, nil)]).map(\.rule) == ["truncated"])
        // The TC bit in a query means "more known answers follow": fine.
        var query = Make.query("_x._tcp.local.")
        query.truncated = true
        #expect(Self.findings([(0, "10.0.0.7", query, nil)]).isEmpty)
        // A first fragment is an oversize answer, without a packet to decode.
        var fragment = Make.datagram(Self.h1, from: "10.0.0.8")
        fragment.claimedLength = 3000
        fragment.fragmented = true
        var fresh = WatchEngine()
        let said = fresh.process(fragment, time: 0, interface: "nb0")
        #expect(said.count == 1)
        // Its header says what kind of packet it is.
        if case let .finding(finding)? = said.first {
            #expect(finding.rule == "oversize" && finding.evidence.hasPrefix("a response of 3000 bytes, sent in IP fragments"), "\(finding.evidence)")
        } else {
            Issue.record("no finding: \(said)")
        }
    }

    @Test func reflectorEcho() {
        let service = Make.response([Make.srv("a._x._tcp.local.", port: 80, target: "a.local.")])
        let found = Self.findings([(0, "10.0.0.5", service, "eth0"), (0.05, "10.1.0.1", service, "eth1")])
        #expect(found.map(\.rule) == ["reflector-echo"])
        // The same record on one interface from two sources (IPv4, IPv6) is no echo, nor is a host
        // announcing its own address on each of its links.
        #expect(Self.findings([(0, "10.0.0.5", service, "eth0"), (0.05, "fe80::5", service, "eth0")]).isEmpty)
        let own = Make.response([Make.a("m.local.", [10, 0, 0, 5]), Make.a("m.local.", [10, 1, 0, 5])])
        #expect(Self.findings([(0, "10.0.0.5", own, "eth0"), (0.05, "10.1.0.5", own, "eth1")]).isEmpty)
    }

    @Test func flapping() {
        let on = Make.response([Make.ptr("_x._tcp.local.", "a._x._tcp.local.")])
        let off = Make.response([Make.ptr("_x._tcp.local.", "a._x._tcp.local.", ttl: 0)])
        let cycles = (0..<4).flatMap { [(Double($0) * 10, "10.0.0.5", on, Optional<String>.none), (Double($0) * 10 + 5, "10.0.0.5", off, nil)] }
        let found = Self.findings(cycles)
        #expect(found.map(\.rule) == ["flapping"])
        #expect(Self.findings(Array(cycles.prefix(4))).isEmpty)
    }

    @Test func filtersNarrowPacketsAndFindings() {
        var engine = WatchEngine(filter: WatchFilter(service: "_nearby._tcp", host: "10.99.0.2"))
        let ours = Make.response([Make.ptr("_nearby._tcp.local.", "abc._nearby._tcp.local.")])
        let other = Make.response([Make.ptr("_http._tcp.local.", "w._http._tcp.local.")])
        #expect(engine.process(Make.datagram(ours, from: "10.99.0.2"), time: 0, interface: nil).count == 1)
        #expect(engine.process(Make.datagram(other, from: "10.99.0.2"), time: 0, interface: nil).isEmpty)
        #expect(engine.process(Make.datagram(ours, from: "10.99.0.3"), time: 0, interface: nil).isEmpty)
        var byPeer = WatchEngine(filter: WatchFilter(peer: "Bob"))
        let txt = Make.response([Make.record("zz._nearby._tcp.local.", .txt, ttl: 4500, .txt([Array("_d=Bob".utf8)]))])
        #expect(byPeer.process(Make.datagram(txt, from: "10.0.0.1"), time: 0, interface: nil).count == 1)
        #expect(byPeer.process(Make.datagram(other, from: "10.0.0.1"), time: 0, interface: nil).isEmpty)
    }

    /// A flood of new names, questions and sources: every table stays within its cap, and the
    /// findings printed stop at theirs.
    @Test func floodsAreBounded() {
        var engine = WatchEngine()
        for index in 0..<30_000 {
            let source = "10.\(index / 65536 % 256).\(index / 256 % 256).\(index % 256)"
            let message = index % 2 == 0
                ? Make.response([Make.a("h\(index).local.", [10, 0, 0, 1], ttl: 99_999), Make.srv("s\(index)._x._tcp.local.", port: 1, target: "h.local.")])
                : Make.query("q\(index).local.")
            _ = engine.process(Make.datagram(message, from: source), time: Double(index) * 0.001, interface: "nb0")
        }
        #expect(engine.conflict.claims.count <= 4096 && engine.rename.namesOf.count <= 4096 && engine.chatty.asking.count <= 4096)
        #expect(engine.ttl.once.last.count <= 4096 && engine.hosts.count <= WatchEngine.maxHosts && engine.echo.copies.count <= 8192)
        #expect(engine.findings > engine.suppressed && engine.suppressed > 0 && engine.findings - engine.suppressed <= 1000)
        let summary = engine.summary(dropped: 0)
        #expect(summary.packets == 30_000 && summary.hosts.count <= 64)
    }

    @Test func tableShowsHostsServicesAndAnsweredQuestions() {
        var engine = WatchEngine()
        _ = engine.process(Make.datagram(Make.query("_nearby._tcp.local."), from: "10.99.0.3"), time: 0, interface: "nb0")
        _ = engine.process(Make.datagram(DecoderTests.announcement, from: "10.99.0.2"), time: 0.1, interface: "nb0")
        _ = engine.process(Make.datagram(Make.query("gone._x._tcp.local.", .srv), from: "10.99.0.3"), time: 0.2, interface: "nb0")
        let snapshot = engine.table.snapshot(now: 1)
        #expect(snapshot.hosts.map(\.name) == ["h2.local."] && snapshot.hosts.first?.addresses == ["nb0": ["10.99.0.2"]])
        #expect(snapshot.services.first?.host == "h2.local." && snapshot.services.first?.port == 39339)
        #expect(snapshot.questions.map { $0.answered != nil } == [false, true])
    }
}

extension RuleTests {
    /// A host that renames itself (avahi: h2 → h2-2) changes its reverse-lookup PTR over IPv4 and
    /// IPv6 at different moments: one host, no conflict — a rename.
    @Test func aHostRenamingOverBothFamiliesIsNoConflict() {
        let v6: [UInt8] = [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [2]
        let reverse = "2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.e.f.ip6.arpa."
        func announce(_ host: String) -> DNSMessage {
            Make.response([Make.a("\(host).local.", [10, 99, 0, 2]), Make.record("\(host).local.", .aaaa, .aaaa(v6)),
                           Make.record(reverse, .ptr, .ptr(Make.name("\(host).local.")))])
        }
        let found = Self.findings([(0, "fe80::2", announce("h2"), "nb0"), (0.01, "10.99.0.2", announce("h2"), "nb0"),
                                   (5, "10.99.0.2", announce("h2-2"), "nb0")])
        #expect(found.map(\.rule) == ["rename"])
    }
}
