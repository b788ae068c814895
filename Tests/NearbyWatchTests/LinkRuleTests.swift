import NearbyBase
import NearbyDNS
import Testing
@testable import NearbyWatch

/// Issue 60: the rules for faults that had none (an over-eager announcer, unasked answers, a
/// second stack taking unicast queries), the right host blamed, and the small ones of item 8.
@Suite struct LinkRuleTests {
    /// Each packet: time, datagram; the findings, with the end of the capture.
    static func findings(_ packets: [(Double, UDPDatagram)]) -> [Events.Finding] {
        var engine = WatchEngine()
        var outputs: [WatchEngine.Output] = []
        for (time, datagram) in packets { outputs += engine.process(datagram, time: time, interface: "nb0") }
        outputs += engine.ended()
        return outputs.compactMap { if case let .finding(finding) = $0 { finding } else { nil } }
    }

    static let h9 = Make.response([Make.a("h9.local.", [10, 99, 0, 9])])

    @Test func anAnnouncerEvery100msIsNamedAndAvahisAnnouncementsAreNot() {
        let eager = (0..<20).map { (Double($0) * 0.1, Make.datagram(Self.h9, from: "10.99.0.9")) }
        let found = Self.findings(eager)
        #expect(found.map(\.rule) == ["over-eager-announcer"])
        #expect(found.first?.host == "10.99.0.9" && found.first?.evidence.contains("about every 100 ms") == true)
        // RFC 6762 §8.3's announcements (1 s, then doubling): no finding.
        #expect(Self.findings([0.0, 1, 3, 7].map { ($0, Make.datagram(Self.h9, from: "10.99.0.9")) }).isEmpty)
        // Answers to a chatty querier's questions are the querier's fault, not the responder's.
        var answered: [(Double, UDPDatagram)] = []
        for step in 0..<20 {
            answered.append((Double(step) * 0.1, Make.datagram(Make.query("h9.local.", .a), from: "10.99.0.3")))
            answered.append((Double(step) * 0.1 + 0.02, Make.datagram(Self.h9, from: "10.99.0.9")))
        }
        #expect(!Self.findings(answered).map(\.rule).contains("over-eager-announcer"))
    }

    @Test func answersNobodyAskedAreNamedPastTheAnnouncements() {
        let unasked = (0..<12).map { (Double($0) * 5, Make.datagram(Self.h9, from: "10.99.0.9")) }
        let found = Self.findings(unasked)
        #expect(found.map(\.rule) == ["unasked-answers"])
        #expect(found.first?.evidence.contains("9 times") == true)
        // The same answers to questions asked: fine.
        var asked: [(Double, UDPDatagram)] = []
        for step in 0..<12 {
            let time = Double(step) * 5
            asked.append((time, Make.datagram(Make.query("h9.local.", .a), from: "10.99.0.3")))
            asked.append((time + 0.1, Make.datagram(Self.h9, from: "10.99.0.9")))
        }
        #expect(Self.findings(asked).isEmpty)
        // A change (new data) starts a new set of announcements.
        var changing: [(Double, UDPDatagram)] = []
        for step in 0..<12 {
            let last: UInt8 = step % 2 == 0 ? 9 : 109
            changing.append((Double(step) * 5, Make.datagram(Make.response([Make.a("h9.local.", [10, 99, 0, last])]), from: "10.99.0.9")))
        }
        #expect(!Self.findings(changing).map(\.rule).contains("unasked-answers"))
    }

    @Test func unicastQueriesNobodyAnswersNameASecondStack() {
        let query = Make.query("h2.local.", .a)
        var packets: [(Double, UDPDatagram)] = [(0, Make.datagram(Make.response([Make.a("h2.local.", [10, 99, 0, 2])]), from: "10.99.0.2"))]
        for step in 1...4 { packets.append((Double(step), Make.datagram(query, from: "10.99.0.1", port: 40000, to: "10.99.0.2"))) }
        let found = Self.findings(packets)
        #expect(found.map(\.rule) == ["unicast-unanswered"])
        #expect(found.first?.host == "10.99.0.2" && found.first?.evidence.contains("h2.local. A") == true)
        // Answered each time (by unicast, to the querier): nothing.
        var answered = Array(packets.prefix(1))
        for step in 1...4 {
            answered.append((Double(step), Make.datagram(query, from: "10.99.0.1", port: 40000, to: "10.99.0.2")))
            answered.append((Double(step) + 0.05, Make.datagram(Make.response([Make.a("h2.local.", [10, 99, 0, 2])]), from: "10.99.0.2", to: "10.99.0.1", toPort: 40000)))
        }
        #expect(Self.findings(answered).isEmpty)
        // A name the host never answered is not its to answer.
        let elsewhere = (1...4).map { (Double($0), Make.datagram(Make.query("h7.local.", .a), from: "10.99.0.1", port: 40000, to: "10.99.0.2")) }
        #expect(Self.findings(Array(packets.prefix(1)) + elsewhere).isEmpty)
    }

    @Test func aChattyQuerierFromPort5353IsTheDaemonAskingForAClient() {
        let query = Make.query("silent._nearby._tcp.local.", .srv)
        let daemon = Self.findings((0..<20).map { (Double($0) * 0.1, Make.datagram(query, from: "10.99.0.1")) })
        #expect(daemon.map(\.rule) == ["chatty-querier"])
        #expect(daemon.first?.hint.contains("mDNS daemon on 10.99.0.1") == true)
        #expect(daemon.first?.hint.contains("instead of through the daemon") == false)
        let program = Self.findings((0..<20).map { (Double($0) * 0.1, Make.datagram(query, from: "10.99.0.1", port: 41000)) })
        #expect(program.first?.hint.contains("its own port 41000") == true)
    }

    @Test func aSymmetricConflictIsOneLineBlamingTheNewcomer() {
        func claim(_ last: UInt8) -> DNSMessage {
            Make.response([Make.a("h2.local.", [10, 99, 0, last]),
                           Make.record("h2.local.", .aaaa, .aaaa([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [last])),
                           Make.record("h2.local.", .hinfo, .unknown([3] + Array("X86".utf8) + [7] + Array("LINUX \(last)".utf8)))])
        }
        var packets: [(Double, UDPDatagram)] = []
        for second in stride(from: 0.0, to: 200, by: 10) {
            packets.append((second, Make.datagram(claim(2), from: "10.99.0.2")))
            packets.append((second + 5, Make.datagram(claim(3), from: "10.99.0.3")))
            packets.append((second + 5.1, Make.datagram(claim(3), from: "fe80::3")))
        }
        // Whoever spoke last, the one that claimed later is named, once.
        packets.append((201, Make.datagram(claim(2), from: "10.99.0.2")))
        let found = Self.findings(packets).filter { $0.rule == "conflict" }
        #expect(found.count == 1)
        #expect(found.first?.host == "10.99.0.3" && found.first?.evidence.contains("10.99.0.2 answered it first") == true)
    }

    @Test func ttlFindingsTellTooShortFromTooLongAndWhatATTLOf2To31Is() {
        let short = Make.response([Make.a("h5.local.", [10, 0, 0, 5], ttl: 1)])
        let huge = Make.response([Make.a("h5.local.", [10, 0, 0, 5], ttl: 4_294_967_295)])
        let found = Self.findings([(0, Make.datagram(short, from: "10.0.0.5")), (1, Make.datagram(huge, from: "10.0.0.5"))])
        #expect(found.filter { $0.rule == "ttl" }.count == 2)
        #expect(found.last?.evidence.contains("RFC 2181") == true && found.last?.evidence.contains("read it as 0") == true)
        var engine = WatchEngine()
        _ = engine.process(Make.datagram(huge, from: "10.0.0.5"), time: 0, interface: "nb0")
        #expect(engine.table.snapshot(now: 30).hosts.isEmpty)
    }

    @Test func aOneShotReplyNeitherSetsTheTTLNorAnswersTheLinksQuestion() {
        var engine = WatchEngine()
        _ = engine.process(Make.datagram(Make.response([Make.srv("tv._x._tcp.local.", port: 9, target: "h2.local.", ttl: 120)]), from: "10.99.0.2"), time: 0, interface: "nb0")
        // A one-shot querier's reply: TTL 10 (RFC 6762 §6.7), to its port.
        let oneShot = Make.response([Make.srv("tv._x._tcp.local.", port: 9, target: "h2.local.", ttl: 10)])
        _ = engine.process(Make.datagram(oneShot, from: "10.99.0.2", to: "10.99.0.7", toPort: 41000), time: 1, interface: "nb0")
        #expect(engine.table.snapshot(now: 60).services.first?.expires == 120)
        // h3 asks the link; a unicast reply to h7 does not answer h3.
        _ = engine.process(Make.datagram(Make.query("tv._x._tcp.local.", .srv), from: "10.99.0.3"), time: 2, interface: "nb0")
        _ = engine.process(Make.datagram(oneShot, from: "10.99.0.2", to: "10.99.0.7", toPort: 41000), time: 2.1, interface: "nb0")
        #expect(engine.table.snapshot(now: 3).questions.first?.answered == nil)
        _ = engine.process(Make.datagram(Make.response([Make.srv("tv._x._tcp.local.", port: 9, target: "h2.local.")]), from: "10.99.0.2"), time: 2.2, interface: "nb0")
        #expect(engine.table.snapshot(now: 3).questions.first?.answered == 2.2)
    }

    /// RFC 2181 §8: a TTL of 2^31 or more is read as 0. The packet line shows it as received; its
    /// meaning, the table and the rules read it as a goodbye (the `ttl` rule alone names it).
    @Test func aTTLOf2To31IsShownAsReceivedAndReadAsAGoodbye() {
        var engine = WatchEngine()
        let announced = Make.response([Make.ptr("_x._tcp.local.", "tv._x._tcp.local.")])
        let wrapped = Make.response([Make.ptr("_x._tcp.local.", "tv._x._tcp.local.", ttl: 1 << 31)])
        var out: [WatchEngine.Output] = []
        for cycle in 0..<3 {
            out += engine.process(Make.datagram(announced, from: "10.99.0.2"), time: Double(cycle) * 10, interface: "nb0")
            out += engine.process(Make.datagram(wrapped, from: "10.99.0.2"), time: Double(cycle) * 10 + 5, interface: "nb0")
        }
        // Another host's copy of h2's address with TTL 4294967295: caches drop it, no conflict.
        out += engine.process(Make.datagram(Make.response([Make.a("h2.local.", [10, 99, 0, 2])]), from: "10.99.0.2"), time: 30, interface: "nb0")
        out += engine.process(Make.datagram(Make.response([Make.a("h2.local.", [10, 99, 0, 3], ttl: .max)]), from: "10.99.0.3"), time: 31, interface: "nb0")
        let packets = out.compactMap { if case let .packet(packet) = $0 { packet } else { nil } }
        #expect(packets[1].answers.first?.ttl == 1 << 31)
        #expect(packets[1].meaning.first?.kind == "withdrawn")
        #expect(packets.last?.answers.first?.ttl == .max && packets.last?.meaning.first?.kind == "address-withdrawn")
        let rules = out.compactMap { if case let .finding(finding) = $0 { finding.rule } else { nil } }
        #expect(rules.sorted() == ["flapping", "ttl", "ttl"])
        // The table: the instance expired at its last goodbye.
        #expect(engine.table.snapshot(now: 32).services.first?.expires == 25)
    }

    /// A unicast answer more than a second late is no answer: the queries are decided as the next
    /// packet comes, before it counts.
    @Test func aUnicastAnswerOverASecondLateIsNoAnswer() {
        let query = Make.query("h2.local.", .a), answer = Make.response([Make.a("h2.local.", [10, 99, 0, 2])])
        var packets: [(Double, UDPDatagram)] = [(0, Make.datagram(answer, from: "10.99.0.2"))]
        for step in 1...3 {
            packets.append((Double(step) * 2, Make.datagram(query, from: "10.99.0.1", port: 40000, to: "10.99.0.2")))
            packets.append((Double(step) * 2 + 1.5, Make.datagram(answer, from: "10.99.0.2", to: "10.99.0.1", toPort: 40000)))
        }
        let found = Self.findings(packets)
        #expect(found.map(\.rule) == ["unicast-unanswered"] && found.first?.interface == "nb0")
    }
}
