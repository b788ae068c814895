import Foundation
import NearbyBase
import NearbyDNS

/// What `--service`, `--peer` and `--host` narrow the packets to. Findings are narrowed by
/// `--host` only: a fault is worth seeing whatever service it touches.
package struct WatchFilter: Sendable {
    /// `_nearby._tcp.local.`: packets with a name at or under it (a question, a record, a PTR's target).
    package var service: DNSName?
    /// An instance or host whose first label is this (case-insensitive), or whose TXT has `_d=` it.
    package var peer: String?
    /// A source address, or an address in an A/AAAA record.
    package var host: String?

    /// `service`: a DNS-SD type, `_http._tcp` (in `local.`).
    package init(service: String? = nil, peer: String? = nil, host: String? = nil) {
        self.service = service.flatMap { try? DNSName($0 + ".local.") }
        self.peer = peer?.lowercased()
        self.host = host?.lowercased()
    }

    package var isEmpty: Bool { service == nil && peer == nil && host == nil }

    package func matches(source: String, message: DNSMessage?) -> Bool {
        if isEmpty { return true }
        guard let message else { return service == nil && peer == nil && host.map { $0 == source.lowercased() } != false }
        let records = message.answers + message.authority + message.additional
        if let host, source.lowercased() != host, !records.contains(where: { RecordText.address($0.data)?.lowercased() == host }) {
            return false
        }
        if let service {
            let names = message.questions.map(\.name) + records.map(\.name) + records.compactMap { record in
                if case let .ptr(target) = record.data { target } else { nil }
            }
            guard names.contains(where: { $0.isSubdomain(of: service) }) else { return false }
        }
        if let peer {
            let named = (message.questions.map(\.name) + records.map(\.name)).contains { $0.firstLabel?.lowercased() == peer }
            let displayed = records.contains { record in
                guard case let .txt(strings) = record.data else { return false }
                return strings.contains { String(decoding: $0, as: UTF8.self).lowercased() == "_d=" + peer }
            }
            guard named || displayed else { return false }
        }
        return true
    }

    package func matches(_ finding: Events.Finding) -> Bool {
        host.map { $0 == finding.host.lowercased() } ?? true
    }
}

/// `nearby watch`'s whole decision: each captured datagram in, the events to print out. Pure (no
/// socket, no clock but the packets' own), so every rule is tested on recorded packets; every
/// table it keeps is capped, so a flood costs time, never unbounded memory.
package struct WatchEngine {
    package static let maxHosts = 4096

    package enum Output: Sendable {
        case packet(Events.Packet)
        case finding(Events.Finding)
    }

    let filter: WatchFilter
    /// NSEC type lists, TXT and unknown data printed whole (`--full`), not summarized.
    let full: Bool
    var budget = FindingBudget()
    var conflict = ConflictRule()
    var rename = RenameRule()
    var chatty = ChattyQuerierRule()
    var ttl = TTLRule()
    var size = SizeRule()
    var echo = ReflectorEchoRule()
    var flapping = FlappingRule()
    var asked = RecentQuestions()
    var announcer = AnnouncerRule()
    var unasked = UnaskedAnswerRule()
    var unicast = UnicastQueryRule()
    var malformedOnce = Once<String>(period: 10)
    package private(set) var table = WatchTable()

    package private(set) var packets = 0
    var lastTime = 0.0
    package private(set) var malformed = 0
    package private(set) var skimmed = 0
    package private(set) var findings = 0
    package private(set) var suppressed = 0
    package private(set) var perRule: [String: Int] = [:]
    var hosts = BoundedTable<String, Int>(capacity: WatchEngine.maxHosts)

    package init(filter: WatchFilter = WatchFilter(), full: Bool = false) {
        self.filter = filter
        self.full = full
    }

    /// A datagram counted (its source too) and not decoded: live watch is sampling a flood (`WatchPace`).
    package mutating func skim(_ datagram: UDPDatagram, time: Double) {
        packets += 1
        skimmed += 1
        lastTime = max(lastTime, time)
        hosts.set(datagram.source, (hosts[datagram.source] ?? 0) + 1, at: time)
    }

    /// The events for one datagram captured at `time` on `interface` (nil: not known, a pcap file's).
    package mutating func process(_ datagram: UDPDatagram, time: Double, interface: String?, payloadLimit: Int = 1472) -> [Output] {
        packets += 1
        lastTime = max(lastTime, time)
        hosts.set(datagram.source, (hosts[datagram.source] ?? 0) + 1, at: time)
        var out: [Output] = []
        guard datagram.complete else {
            if datagram.fragmented {
                // The first fragment holds the header: what kind of packet it is, if not its records.
                var header = DNSMessage(id: 0)
                if datagram.payload.count >= 4 { header.isResponse = datagram.payload[datagram.payload.startIndex + 2] & 0x80 != 0 }
                let observation = Observation(
                    time: time, interface: interface, source: datagram.source, sourcePort: datagram.sourcePort,
                    destinationPort: datagram.destinationPort, message: header, size: datagram.claimedLength,
                    payloadLimit: payloadLimit, fragmented: true)
                report(size.observe(observation), into: &out, at: time)
            } else {
                malformedPacket(datagram, why: "cut short by the capture: \(datagram.payload.count) of \(datagram.claimedLength) bytes", time: time, interface: interface, into: &out)
            }
            return out
        }
        let message: DNSMessage
        switch MDNSDecoded(datagram.payload) {
        case let .malformed(why):
            malformedPacket(datagram, why: why, time: time, interface: interface, into: &out)
            return out
        case let .message(decoded):
            message = decoded
        }
        let observation = Observation(
            time: time, interface: interface, source: datagram.source, sourcePort: datagram.sourcePort,
            destinationPort: datagram.destinationPort, destination: datagram.destination, message: message, size: datagram.payload.count, payloadLimit: payloadLimit,
            fragmented: datagram.fragmented)
        table.observe(observation)
        if filter.matches(source: datagram.source, message: message) {
            out.append(.packet(Self.packet(observation, destination: datagram.destination, full: full)))
        }
        report(conflict.observe(observation), into: &out, at: time)
        report(rename.observe(observation), into: &out, at: time)
        report(chatty.observe(observation), into: &out, at: time)
        report(ttl.observe(observation), into: &out, at: time)
        report(size.observe(observation), into: &out, at: time)
        report(echo.observe(observation), into: &out, at: time)
        report(flapping.observe(observation), into: &out, at: time)
        let solicited = asked.answers(observation)
        report(announcer.observe(observation, solicited: solicited), into: &out, at: time)
        report(unasked.observe(observation, solicited: solicited), into: &out, at: time)
        report(unicast.observe(observation), into: &out, at: time)
        asked.observe(observation)
        return out
    }

    private mutating func malformedPacket(_ datagram: UDPDatagram, why: String, time: Double, interface: String?, into out: inout [Output]) {
        malformed += 1
        guard malformedOnce.admit(datagram.source, at: time) else { return }
        report([Events.Finding(
            rule: "malformed", host: datagram.source, interface: interface,
            evidence: "a packet of \(datagram.payload.count) bytes from \(datagram.source) port \(datagram.sourcePort) is not well-formed DNS: \(why)",
            hint: "a broken responder or querier on \(datagram.source) (or something else using UDP 5353): find the program (on that host, `ss -uanp 'sport = :5353'`)")],
            into: &out, at: time)
    }

    /// The kernel dropped `count` packets in the last turn (`total` since watching began) for want
    /// of room in the socket's buffer: a `kernel-drops` finding (through the same budget), as they
    /// happen — what watch shows is then less than the link carried.
    package mutating func kernelDropped(_ count: Int, total: Int, time: Double, interface: String?) -> [Output] {
        guard count > 0 else { return [] }
        var out: [Output] = []
        report([Events.Finding(
            rule: "kernel-drops", host: "this host", interface: interface,
            evidence: "the kernel dropped \(count) mDNS packets just now (\(total) since watching began) before watch could read them",
            hint: "watch sees less than the link carries: the link floods or this host is busy (the summary's busiest hosts say who sends most); capture with `tcpdump -w` and read it with --read to see every packet")],
            into: &out, at: time)
        return out
    }

    /// What the clock alone decides (a unicast query left unanswered): called once a second live.
    package mutating func tick(time: Double) -> [Output] {
        var out: [Output] = []
        report(unicast.expire(at: time), into: &out, at: time)
        return out
    }

    /// The end of a capture file: what was still waiting is decided as if the wait had passed.
    package mutating func ended() -> [Output] {
        tick(time: lastTime + UnicastQueryRule.wait + 0.001)
    }

    /// A finding printed, unless its rule and host (or its rule, across hosts) used up their
    /// budget this minute: counted in the summary either way.
    mutating func report(_ found: [Events.Finding], into out: inout [Output], at time: Double) {
        for finding in found where filter.matches(finding) {
            findings += 1
            perRule[finding.rule, default: 0] += 1
            guard budget.admit(finding, at: time) else { suppressed += 1; continue }
            out.append(.finding(finding))
        }
    }

    /// The summary once watching ends; `dropped`: what the kernel dropped before watch read it.
    package func summary(dropped: Int) -> Events.WatchSummary {
        let busiest = hosts.entries.map { Events.HostCount(address: $0.key, packets: $0.value.value) }
            .sorted { ($0.packets, $1.address) > ($1.packets, $0.address) }.prefix(64)
        return Events.WatchSummary(
            packets: packets, malformed: malformed, dropped: dropped, skimmed: skimmed, hosts: Array(busiest), findings: findings, rules: perRule,
            findingsSuppressed: suppressed, exitStatus: 0)
    }

    static func packet(_ observation: Observation, destination: String, full: Bool = false) -> Events.Packet {
        let message = observation.message
        return Events.Packet(
            captured: EventEncoder.timestamp(Date(timeIntervalSince1970: observation.time)), interface: observation.interface,
            source: observation.source, sourcePort: Int(observation.sourcePort), destination: destination,
            destinationPort: Int(observation.destinationPort), kind: message.isResponse ? "response" : "query", id: Int(message.id),
            size: observation.size, truncated: message.truncated, questions: message.questions.map(RecordText.question),
            answers: message.answers.map { RecordText.record($0, full: full) },
            authority: message.authority.map { RecordText.record($0, full: full) },
            additional: message.additional.map { RecordText.record($0, full: full) }, meaning: PacketMeaning.of(message))
    }
}

/// How many findings print: per rule and host at most `perHost` a minute, per rule (across hosts)
/// at most `perRule` — so one host's noise spends only its own budget, a flood from many hosts only
/// its rule's, and a fault of another rule or host still prints. Counts are kept for 4,096 keys.
struct FindingBudget {
    static let window = 60.0
    static let perHost = 5
    static let perRule = 100

    var spent = BoundedTable<String, (start: Double, count: Int)>(capacity: 4096)

    mutating func admit(_ finding: Events.Finding, at time: Double) -> Bool {
        let keys = ["\(finding.rule) \(finding.host)", finding.rule]
        let limits = [Self.perHost, Self.perRule]
        var counts: [(start: Double, count: Int)] = []
        for key in keys {
            var entry = spent[key] ?? (time, 0)
            if time - entry.start >= Self.window || time < entry.start { entry = (time, 0) }
            counts.append(entry)
        }
        guard zip(counts, limits).allSatisfy({ $0.count < $1 }) else { return false }
        for (key, entry) in zip(keys, counts) { spent.set(key, (entry.start, entry.count + 1), at: time) }
        return true
    }
}

extension WatchEngine {
    /// How much a rule's finding matters to a person at a terminal (the FINDINGS panel keeps the
    /// highest): 3 a host or service losing its name or reached at the wrong place, 2 a broken
    /// packet or querier, 1 a record's TTL.
    package static func severity(_ rule: String) -> Int {
        switch rule {
        case "conflict", "rename", "reflector-echo", "flapping", "split-brain": 3
        case "ttl": 1
        default: 2
        }
    }
}
