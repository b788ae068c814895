import NearbyBase
import NearbyDNS

/// The questions heard on the link in the last moment, by name and type: whether a response
/// answers one of them (solicited) or nobody asked (an announcement, or an unasked answer).
/// Responders wait 20–120 ms, up to 500 ms to aggregate (RFC 6762 §6), so a question counts for 1.5 s.
struct RecentQuestions {
    static let window = 1.5
    var heard = BoundedTable<String, Double>(capacity: 4096)

    mutating func observe(_ observation: Observation) {
        guard !observation.message.isResponse else { return }
        for question in observation.message.questions {
            heard.set(question.name.key + " " + question.type.description, observation.time, at: observation.time)
        }
    }

    /// Whether any answer of this response matches a question heard within the window.
    func answers(_ observation: Observation) -> Bool {
        let now = observation.time
        return observation.message.answers.contains { record in
            [record.type.description, DNSType.any.description].contains { type in
                heard[record.name.key + " " + type].map { now - $0 <= Self.window && now >= $0 } ?? false
            }
        }
    }
}

/// A responder multicasting one record faster than RFC 6762 allows, unasked: §6.2 wants a second
/// between two multicasts of a record on a link, §8.3 announcements a second apart, then doubling.
/// Only responses that answer no question heard count (a chatty querier's answers are its fault),
/// and the first quick repeats are forgiven (a probe's defence may come 250 ms after the last).
struct AnnouncerRule {
    static let quick = 0.9
    static let forgiven = 3

    var sent = BoundedTable<String, (last: Double, first: Double, quick: Int)>(capacity: 4096)
    var once = Once<String>(period: 60)

    mutating func observe(_ observation: Observation, solicited: Bool) -> [Events.Finding] {
        guard observation.message.isResponse, observation.multicast, !solicited else { return [] }
        let now = observation.time
        var findings: [Events.Finding] = []
        for record in observation.message.answers where record.cachedTTL > 0 && record.type != .opt {
            let key = "\(observation.source) \(observation.interface ?? "") \(record.name.key) \(record.type)"
            var entry = sent[key] ?? (now, now, 0)
            let interval = now - entry.last
            if entry.last < now, interval < Self.quick { entry.quick += 1 } else if interval >= Self.quick { entry = (now, now, 0) }
            entry.last = now
            sent.set(key, entry, at: now)
            guard entry.quick > Self.forgiven, once.admit("\(observation.source) \(observation.interface ?? "")", at: now) else { continue }
            let span = max(now - entry.first, 0.001)
            let every = Int((span / Double(entry.quick) * 1000).rounded())
            findings.append(Events.Finding(
                rule: "over-eager-announcer", host: observation.source, interface: observation.interface, name: record.name.shown,
                evidence: "\(observation.source) multicast \(record.name.shown) \(record.type) unasked \(entry.quick + 1) times in \(ChattyQuerierRule.seconds(span)) s, about every \(every) ms; RFC 6762 §6.2 allows a record once a second on a link, §8.3 announcements 1 s apart, then doubling",
                hint: "a responder on \(observation.source) announces in a loop (a program with its own mDNS stack, or a daemon re-registering its records): every cache on the link takes each copy; find it (on that host, `ss -uanp 'sport = :5353'`)"))
        }
        return findings
    }
}

/// A responder multicasting answers nobody asked for, on and on: RFC 6762 §8.3 allows up to 8
/// announcements of a record after it changes (a goodbye, new data); past them a record goes out
/// only to answer a question. Counted per source and record, unchanged, over 10 minutes.
struct UnaskedAnswerRule {
    static let announcements = 8
    static let window = 600.0

    var copies = BoundedTable<String, (first: Double, last: Double, count: Int)>(capacity: 4096)
    var once = Once<String>(period: 600)

    mutating func observe(_ observation: Observation, solicited: Bool) -> [Events.Finding] {
        guard observation.message.isResponse, observation.multicast, !solicited else { return [] }
        let now = observation.time
        var findings: [Events.Finding] = []
        for record in observation.message.answers where record.type != .opt {
            let key = "\(observation.source) \(record.name.key) \(record.type) \(record.data.digest)"
            guard record.cachedTTL > 0 else { copies.remove(key); continue }
            var entry = copies[key] ?? (now, now - AnnouncerRule.quick, 0)
            if now - entry.first > Self.window || now < entry.first { entry = (now, now - AnnouncerRule.quick, 0) }
            // Copies under a second apart are the over-eager announcer's to name.
            guard now - entry.last >= AnnouncerRule.quick else { continue }
            entry.count += 1
            entry.last = now
            copies.set(key, entry, at: now)
            guard entry.count > Self.announcements, once.admit(observation.source, at: now) else { continue }
            findings.append(Events.Finding(
                rule: "unasked-answers", host: observation.source, interface: observation.interface, name: record.name.shown,
                evidence: "\(observation.source) multicast \(record.name.shown) \(record.type), unchanged, \(entry.count) times in \(Int((now - entry.first).rounded())) s with no question for it on the link; RFC 6762 §8.3 allows up to \(Self.announcements) announcements after a change",
                hint: "a responder on \(observation.source) answers questions nobody asked (a program with its own mDNS stack, or one that re-announces on a timer): find it (on that host, `ss -uanp 'sport = :5353'`); if watch cannot hear the link's questions (another interface, a switch), this is not a fault"))
        }
        return findings
    }
}

/// Unicast queries to a host's port 5353 for a name that host answers, left without an answer:
/// a second mDNS stack on that host bound 5353 too, and the kernel hands unicast datagrams to one
/// socket only — the daemon never sees them (RFC 6762 §15). Heard where the query or the reply
/// passes: on the querier or on the host queried.
struct UnicastQueryRule {
    static let wait = 1.0
    static let unanswered = 3
    static let window = 60.0

    struct Pending {
        var asked: Double
        /// Queries for the name since the first unanswered one.
        var count: Int
        var querier: String
        var question: String
        /// Where the first of them was seen.
        var interface: String?
    }

    /// The sources that answered each name (at most 8 a name).
    var answerers = BoundedTable<String, Set<String>>(capacity: 4096)
    var pending = BoundedTable<String, Pending>(capacity: 1024)
    var tally = BoundedTable<String, (start: Double, unanswered: Int, example: String)>(capacity: 1024)
    var once = Once<String>(period: 600)
    /// No query now pending was asked before this (it may be earlier than the oldest left, never
    /// later): until `wait` after it, `expire` has nothing to look at and returns at once.
    var oldest = Double.infinity

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        let now = observation.time, message = observation.message
        // Decided before this packet counts: an answer later than `wait` is no answer.
        let findings = expire(at: now)
        if message.isResponse {
            for record in observation.claims {
                var sources = answerers[record.name.key] ?? []
                if record.cachedTTL > 0, sources.count < 8 { sources.insert(observation.source) }
                answerers.set(record.name.key, sources, at: now)
                pending.remove(observation.source + " " + record.name.key)
            }
        } else if !observation.multicast, observation.destinationPort == FrameParser.mdnsPort {
            for question in message.questions where answerers[question.name.key]?.contains(observation.destination) == true {
                let key = observation.destination + " " + question.name.key
                var entry = pending[key] ?? Pending(
                    asked: now, count: 0, querier: observation.source, question: "\(question.name.shown) \(question.type)", interface: observation.interface)
                entry.count += 1
                pending.set(key, entry, at: now)
                oldest = min(oldest, entry.asked)
            }
        }
        return findings
    }

    /// Queries older than `wait` are unanswered; a finding once a host left `unanswered` of them in a minute.
    mutating func expire(at now: Double) -> [Events.Finding] {
        guard now - oldest > Self.wait else { return [] }
        let late = pending.entries.filter { now - $0.value.value.asked > Self.wait }
        oldest = pending.entries.values.lazy.map(\.value.asked).filter { now - $0 <= Self.wait }.min() ?? .infinity
        var findings: [Events.Finding] = []
        for (key, entry) in late.sorted(by: { $0.value.value.asked < $1.value.value.asked }) {
            pending.remove(key)
            guard let host = key.split(separator: " ").first.map(String.init) else { continue }
            var count = tally[host] ?? (entry.value.asked, 0, entry.value.question)
            if entry.value.asked - count.start > Self.window { count = (entry.value.asked, 0, entry.value.question) }
            count.unanswered += entry.value.count
            tally.set(host, count, at: now)
            guard count.unanswered >= Self.unanswered, once.admit(host, at: now) else { continue }
            findings.append(Events.Finding(
                rule: "unicast-unanswered", host: host, interface: entry.value.interface, name: entry.value.question,
                evidence: "\(count.unanswered) unicast queries to \(host) port 5353 for names it answers on the link (\(count.example), from \(entry.value.querier)) got no answer within \(Int(Self.wait)) s",
                hint: "a second mDNS stack on \(host) bound port 5353 and takes the unicast queries meant for its daemon (the kernel gives each to one socket): on that host, `ss -uanp 'sport = :5353'` lists them, and `nearby doctor` names it (mdns-stacks)"))
        }
        return findings
    }
}
