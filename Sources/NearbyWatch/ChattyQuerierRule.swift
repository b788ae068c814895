import NearbyBase
import NearbyDNS

/// A querier that repeats one question faster than RFC 6762 §5.2 allows: the first two queries at
/// least a second apart, and the interval at least doubling after. The first few quick repeats are
/// forgiven (a daemon's clients starting together, a probe's 250 ms steps are not questions).
struct ChattyQuerierRule {
    static let quick = 0.9
    static let forgiven = 3

    struct Asking {
        var last: Double
        var first: Double
        var quick: Int
        var count: Int
    }

    var asking = BoundedTable<String, Asking>(capacity: 4096)
    var once = Once<String>(period: 60)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        let message = observation.message
        // A probe (a question with the proposed records in authority) goes in 250 ms steps by design.
        guard !message.isResponse, message.authority.isEmpty else { return [] }
        var findings: [Events.Finding] = []
        let now = observation.time
        for question in message.questions {
            let key = "\(observation.source) \(observation.interface ?? "") \(question.name.key) \(question.type)"
            var entry = asking[key] ?? Asking(last: now, first: now, quick: 0, count: 0)
            if entry.count > 0 {
                let interval = now - entry.last
                if interval < Self.quick { entry.quick += 1 } else { entry.quick = 0; entry.first = now }
            }
            entry.count += 1
            entry.last = now
            asking.set(key, entry, at: now)
            guard entry.quick > Self.forgiven, once.admit(key, at: now) else { continue }
            let span = max(now - entry.first, 0.001)
            let every = Int((span / Double(entry.quick) * 1000).rounded())
            findings.append(Events.Finding(
                rule: "chatty-querier", host: observation.source, interface: observation.interface, name: question.name.shown,
                evidence: "\(observation.source) asked \(question.name.shown) \(question.type) \(entry.quick + 1) times in \(Self.seconds(span)) s, about every \(every) ms; RFC 6762 §5.2 wants 1 s between the first two, then at least double each time",
                hint: Self.hint(observation)))
        }
        return findings
    }

    /// From port 5353 the querier is the host's mDNS daemon (or a stack of its own there) asking
    /// for its clients: the fault is a client that starts one lookup over and over. From another
    /// port it is a program querying by itself (RFC 6762 §5.1's one-shot querier).
    static func hint(_ observation: Observation) -> String {
        let source = observation.source
        if observation.sourcePort == FrameParser.mdnsPort {
            return "these come from port 5353, the mDNS daemon on \(source) (avahi-daemon, mDNSResponder) asking for its clients: a program there starts the same lookup over and over (a browse or resolve restarted in a loop, or a check such as `nearby doctor` waiting for a peer that does not answer); the daemon is not at fault — find the client (on that host, its logs; `ss -uanp 'sport = :5353'` shows whether a second stack, not the daemon, holds the port)"
        }
        return "a program on \(source) queries from its own port \(observation.sourcePort), not through the daemon, in a loop: find it (on that host, `ss -uanp 'sport = :\(observation.sourcePort)'`) and have it browse through the daemon, or back off as RFC 6762 §5.2 says"
    }

    static func seconds(_ value: Double) -> String {
        value >= 10 ? String(Int(value.rounded())) : String((value * 10).rounded() / 10)
    }
}

/// TTLs far from RFC 6762 §10's: 120 s for a host's addresses and SRV (and HINFO), 75 min for the
/// rest. More than 4 hours keeps a gone peer in every cache for hours; under 5 s (a goodbye is 0)
/// makes caches ask again and again. Answers to a legacy unicast querier (not port 5353) are
/// meant to be short (RFC 6762 §6.7) and not judged.
struct TTLRule {
    static let longest: UInt32 = 4 * 3600
    static let shortest: UInt32 = 5
    /// RFC 2181 §8: a TTL with its top bit set is read as 0.
    static let wraps: UInt32 = 1 << 31
    var once = Once<String>(period: 3600)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        guard observation.destinationPort == FrameParser.mdnsPort else { return [] }
        var findings: [Events.Finding] = []
        for record in observation.claims where record.ttl > 0 && record.type != .opt {
            let tooLong = record.ttl > Self.longest, tooShort = record.ttl < Self.shortest
            guard tooLong || tooShort else { continue }
            let wraps = record.ttl >= Self.wraps
            // Too long and too short are two faults of one record (TTL 1, then 4294967295).
            guard once.admit("\(observation.source) \(record.name.key) \(record.type) \(wraps ? "wraps" : tooLong ? "long" : "short")", at: observation.time) else { continue }
            let expected = [DNSType.a, .aaaa, .srv, .hinfo].contains(record.type) ? "120 s" : "4500 s (75 min)"
            findings.append(Events.Finding(
                rule: "ttl", host: observation.source, interface: observation.interface, name: record.name.shown,
                evidence: "\(record.name.shown) \(record.type) has TTL \(record.ttl) s\(wraps ? " (2^31 or more: RFC 2181 §8 has caches read it as 0, a goodbye)" : ""); RFC 6762 §10 recommends \(expected)",
                hint: wraps
                    ? "caches drop this record at once, as if its host had said goodbye (or, if they do not follow RFC 2181, keep it for decades): fix the responder's TTL"
                    : tooLong
                    ? "caches keep this record long after its host is gone (a ghost): fix the responder's TTL"
                    : "caches drop this record almost at once and ask again: fix the responder's TTL"))
        }
        return findings
    }
}

/// A packet over the link's MTU (it came in IP fragments, or is larger than one frame holds:
/// RFC 6762 §17 wants answers that fit), and a response with the TC bit (truncated: it is only
/// meaningful in a query, RFC 6762 §18.5).
struct SizeRule {
    var once = Once<String>(period: 60)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        var findings: [Events.Finding] = []
        if observation.fragmented || observation.size > observation.payloadLimit,
           once.admit("oversize \(observation.source)", at: observation.time) {
            findings.append(Events.Finding(
                rule: "oversize", host: observation.source, interface: observation.interface,
                evidence: "a \(observation.message.isResponse ? "response" : "query") of \(observation.size) bytes\(observation.fragmented ? ", sent in IP fragments" : ""); the link carries \(observation.payloadLimit) in one frame",
                hint: "fragments are lost more often than frames (and some Wi-Fi drops them): the responder should split its answer over several packets, or publish fewer or smaller records (TXT)"))
        }
        if observation.message.isResponse, observation.message.truncated,
           once.admit("truncated \(observation.source)", at: observation.time) {
            findings.append(Events.Finding(
                rule: "truncated", host: observation.source, interface: observation.interface,
                evidence: "a response with the TC bit set (\(observation.size) bytes)",
                hint: "mDNS responses are never truncated (RFC 6762 §18.5): the responder is broken, or a middlebox rewrote the packet"))
        }
        return findings
    }
}

/// The same record arriving from two sources on two interfaces within a moment: something repeats
/// one link's mDNS on another (avahi's `enable-reflector`, a bridge loop, a multicast router).
/// A host announcing its own address on each of its links is not an echo: a source that is itself
/// one of the record's addresses is left out.
struct ReflectorEchoRule {
    static let window = 2.0

    struct Copy {
        var source: String
        var interface: String
        var time: Double
    }

    var copies = BoundedTable<String, [Copy]>(capacity: 8192)
    var once = Once<String>(period: 60)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        guard let interface = observation.interface else { return [] }
        var findings: [Events.Finding] = []
        let now = observation.time
        for record in observation.claims where record.cachedTTL > 0 {
            if RecordText.address(record.data) == observation.source { continue }
            // The data's hash, not its text: a key stays short whatever the record holds.
            let key = record.name.key + " " + record.type.description + " \(record.data.digest)"
            var known = (copies[key] ?? []).filter { now - $0.time <= Self.window && now >= $0.time }
            if let other = known.first(where: { $0.source != observation.source && $0.interface != interface }),
               once.admit(record.name.key + " " + record.type.description, at: now) {
                findings.append(Events.Finding(
                    rule: "reflector-echo", host: observation.source, interface: interface, name: record.name.shown,
                    evidence: "\(record.name.shown) \(record.type) came from \(other.source) on \(other.interface) and \(Int(((now - other.time) * 1000).rounded())) ms later from \(observation.source) on \(interface)",
                    hint: "something repeats mDNS from one link on another: a reflector (avahi's enable-reflector=yes), a bridge loop or a multicast router; peers may then be found at addresses they cannot be reached at"))
            }
            known.removeAll { $0.source == observation.source && $0.interface == interface }
            known.append(Copy(source: observation.source, interface: interface, time: now))
            copies.set(key, Array(known.suffix(4)), at: now)
        }
        return findings
    }
}

/// A service announced and withdrawn over and over: a process that crashes and restarts, a daemon
/// re-registering in a loop. Three withdrawals of an announced instance within a minute.
struct FlappingRule {
    static let window = 60.0
    static let cycles = 3

    struct State {
        var announced: Bool
        var withdrawals: [Double]
    }

    var instances = BoundedTable<String, State>(capacity: 4096)
    var once = Once<String>(period: 60)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        var findings: [Events.Finding] = []
        let now = observation.time
        for record in observation.claims {
            guard case let .ptr(instance) = record.data, PacketMeaning.serviceType(record.name) == record.name else { continue }
            let key = instance.key
            var state = instances[key] ?? State(announced: false, withdrawals: [])
            if record.cachedTTL > 0 {
                state.announced = true
            } else if state.announced {
                state.announced = false
                state.withdrawals = Array((state.withdrawals + [now]).filter { now - $0 <= Self.window }.suffix(Self.cycles * 2))
                if state.withdrawals.count >= Self.cycles, once.admit(key, at: now) {
                    findings.append(Events.Finding(
                        rule: "flapping", host: observation.source, interface: observation.interface, name: instance.shown,
                        evidence: "\(instance.shown) was announced and withdrawn \(state.withdrawals.count) times in \(Int(now - (state.withdrawals.first ?? now))) s",
                        hint: "the service's process restarts in a loop, or its daemon re-registers it: look at that host's logs (journalctl, the program's own)"))
                }
            }
            instances.set(key, state, at: now)
        }
        return findings
    }
}
