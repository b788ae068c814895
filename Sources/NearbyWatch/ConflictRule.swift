import NearbyBase
import NearbyDNS

/// Two sources answering one unique record (cache-flush set) with different data (RFC 6762 §9):
/// a conflict. One host's sources (its IPv4 and IPv6 addresses) send the same data, so only
/// sources whose data share nothing count, and never two sources one host name claimed as its own
/// addresses (a host that renames itself changes its data on both at once).
struct ConflictRule {
    struct Claim {
        var source: String
        /// The data's hashes (this process's seed), compared; a flood of new data for one name
        /// within a second keeps at most `maxData` of them, never every record it sent.
        var data: Set<Int>
        /// The data as a finding shows it: at most `shownData`, each cut to `shownLength`.
        var shown: [String]
        /// When this source first claimed the record (kept while it goes on claiming it): the one
        /// that claimed later is the one named, whoever speaks next.
        var since: Double
        var updated: Double
        var expires: Double
    }

    static let maxSourcesPerName = 4
    static let maxData = 8
    static let shownData = 4
    static let shownLength = 80
    var claims = BoundedTable<String, [Claim]>(capacity: 4096)
    /// The host name each address first announced as its own (an A/AAAA record of the name, sent
    /// from one of the name's addresses).
    var owners = BoundedTable<String, String>(capacity: 4096)
    var once = Once<String>(period: 3600)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        var groups: [String: (name: DNSName, type: DNSType, data: Set<RData>, ttl: UInt32)] = [:]
        for record in observation.claims where record.cacheFlush && record.cachedTTL > 0 && record.type != .opt && record.type != .nsec {
            let key = record.name.key + " " + record.type.description
            var group = groups[key] ?? (name: record.name, type: record.type, data: Set<RData>(), ttl: record.cachedTTL)
            group.data.insert(record.data)
            groups[key] = group
        }
        var findings: [Events.Finding] = []
        let now = observation.time
        for (key, group) in groups.sorted(by: { $0.key < $1.key }) {
            var known = (claims[key] ?? []).filter { $0.expires >= now }
            let owner = owners[observation.source]
            var conflicting = false
            let hashes = Set(group.data.map(\.hashValue))
            let shown = Self.shown(group.data, type: group.type)
            for other in known where other.source != observation.source && other.data.isDisjoint(with: hashes) {
                if let owner, owners[other.source] == owner { continue }
                conflicting = true
                // One finding a name, whichever of its records (A, AAAA, HINFO; SRV, TXT) and of the
                // hosts' addresses (IPv4, IPv6) shows it first: one conflict is one line an hour.
                guard once.admit(group.name.key, at: now) else { continue }
                let mine = known.first { $0.source == observation.source }?.since ?? now
                let ours = (source: observation.source, text: Self.text(shown, of: hashes.count))
                let theirs = (source: other.source, text: Self.text(other.shown, of: other.data.count))
                let (newcomer, holder) = mine < other.since ? (theirs, ours) : (ours, theirs)
                findings.append(Events.Finding(
                    rule: "conflict", host: newcomer.source, interface: observation.interface, name: group.name.shown,
                    evidence: "\(newcomer.source) answers \(group.name) \(group.type) with \(newcomer.text); \(holder.source) answered it first, with \(holder.text)",
                    hint: "two hosts claim one unique name: rename one (avahi: host-name= in avahi-daemon.conf; a service: its name), or find the host or container that copies another's records"))
            }
            let addresses = group.data.compactMap(RecordText.address)
            if !conflicting, addresses.contains(observation.source) {
                for address in addresses where owners[address] == nil { owners.set(address, group.name.key, at: now) }
            }
            let expires = now + Double(min(group.ttl, 4500))
            if let index = known.firstIndex(where: { $0.source == observation.source }) {
                // Within a second, several packets may carry one set between them.
                let before = known[index]
                let union = before.data.union(hashes)
                let (data, kept) = now - before.updated <= 1 && union.count <= Self.maxData
                    ? (union, Array(Set(before.shown + shown).sorted().prefix(Self.shownData))) : (hashes, shown)
                known[index] = Claim(source: observation.source, data: data, shown: kept, since: before.since, updated: now, expires: expires)
            } else {
                if known.count >= Self.maxSourcesPerName { known.removeFirst() }
                known.append(Claim(source: observation.source, data: hashes, shown: shown, since: now, updated: now, expires: expires))
            }
            claims.set(key, known, at: now)
        }
        return findings
    }
}

extension ConflictRule {
    /// What a claim keeps to show: its data as text, sorted, at most `shownData`, each cut short.
    static func shown(_ data: Set<RData>, type: DNSType) -> [String] {
        Array(data.map { text in
            let full = RecordText.data(text, type: type)
            return full.count > shownLength ? String(full.prefix(shownLength)) + "…" : full
        }.sorted().prefix(shownData))
    }

    static func text(_ shown: [String], of count: Int) -> String {
        shown.joined(separator: ", ") + (count > shown.count ? " and \(count - shown.count) more" : "")
    }
}

/// A daemon renaming after a conflict: avahi's `h1` → `h1-2` for a host, `Name` → `Name #2` for a
/// service (mDNSResponder: `Name (2)`), seen as a new name for an address or beside the old one.
struct RenameRule {
    /// Host names seen per address, and addresses per host name.
    var namesOf = BoundedTable<String, [String]>(capacity: 4096)
    var addressesOf = BoundedTable<String, Set<String>>(capacity: 4096)
    var instances = BoundedTable<String, String>(capacity: 4096)
    var once = Once<String>(period: 3600)

    mutating func observe(_ observation: Observation) -> [Events.Finding] {
        var findings: [Events.Finding] = []
        let now = observation.time
        func report(_ evidence: String, name: DNSName, previous: String, why: String) {
            guard once.admit(name.key, at: now) else { return }
            findings.append(Events.Finding(
                rule: "rename", host: observation.source, interface: observation.interface, name: name.shown,
                evidence: "\(why): \(evidence)",
                hint: "a daemon took a new name because another host answered for \(previous): find that host (`nearby watch --host`), and give each host its own name"))
        }
        for record in observation.claims where record.cachedTTL > 0 {
            switch record.data {
            case let .a(bytes), let .aaaa(bytes):
                let address = FrameParser.address(bytes[...]), name = record.name.key
                if let base = Self.base(ofHost: record.name), base != name {
                    if let previous = namesOf[address]?.first(where: { $0 == base }) {
                        report("\(previous) → \(name) for \(address)", name: record.name, previous: previous, why: "the same address, renamed")
                    } else if let owners = addressesOf[base], !owners.isEmpty, !owners.contains(address) {
                        report("\(name) (\(address)) beside \(base) (\(owners.sorted().joined(separator: ", ")))", name: record.name, previous: base, why: "renamed after a conflict")
                    }
                }
                var names = namesOf[address] ?? []
                if !names.contains(name) { names = Array((names + [name]).suffix(4)) }
                namesOf.set(address, names, at: now)
                var owners = addressesOf[name] ?? []
                if owners.count < 16 { owners.insert(address) }
                addressesOf.set(name, owners, at: now)
            case .srv:
                let name = record.name.key
                instances.set(name, observation.source, at: now)
                if let base = Self.base(ofInstance: record.name), let owner = instances[base] {
                    report("\(name) from \(observation.source) beside \(base) from \(owner)", name: record.name, previous: base, why: "renamed after a conflict")
                }
            default:
                break
            }
        }
        return findings
    }

    /// `h1.local.` for `h1-2.local.`; nil for a name without a `-N` suffix.
    static func base(ofHost name: DNSName) -> String? {
        guard let first = name.labels.first, let dash = first.lastIndex(of: UInt8(ascii: "-")), dash > 0,
              dash + 1 < first.count, first[(dash + 1)...].allSatisfy({ (48...57).contains($0) }),
              let base = try? DNSName(labels: [Array(first[..<dash])] + name.labels.dropFirst())
        else { return nil }
        return base.key
    }

    /// `Name._x._tcp.local.` for `Name #2._x._tcp.local.` and `Name (2)._x._tcp.local.`.
    static func base(ofInstance name: DNSName) -> String? {
        guard let first = name.firstLabel, let rest = try? DNSName(labels: Array(name.labels.dropFirst())) else { return nil }
        let stem: Substring?
        if let match = first.wholeMatch(of: /(.+) #[0-9]+/) {
            stem = match.output.1
        } else if let match = first.wholeMatch(of: /(.+) \([0-9]+\)/) {
            stem = match.output.1
        } else {
            stem = nil
        }
        guard let stem, let base = try? rest.prepending(String(stem)) else { return nil }
        return base.key
    }
}
