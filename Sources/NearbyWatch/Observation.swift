import NearbyDNS

/// One decoded mDNS packet as the rules see it: when, where, from whom, and the message.
package struct Observation: Sendable {
    /// Seconds since 1970 (the capture's clock; a pcap file's own times for `--read`).
    package var time: Double
    package var interface: String?
    package var source: String
    package var sourcePort: UInt16
    package var destinationPort: UInt16
    /// The destination address: a group (224.0.0.251, ff02::fb) or one host (a unicast query or reply).
    package var destination: String
    package var message: DNSMessage
    /// The UDP payload's size, as the UDP header says.
    package var size: Int
    /// The largest UDP payload the link carries in one frame (its MTU less the IP and UDP headers).
    package var payloadLimit: Int
    /// The datagram came in fragments (it was over the link's MTU).
    package var fragmented = false

    package init(
        time: Double, interface: String?, source: String, sourcePort: UInt16 = 5353, destinationPort: UInt16 = 5353,
        destination: String = "224.0.0.251", message: DNSMessage, size: Int, payloadLimit: Int = 1472, fragmented: Bool = false
    ) {
        self.time = time
        self.interface = interface
        self.source = source
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.destination = destination
        self.message = message
        self.size = size
        self.payloadLimit = payloadLimit
        self.fragmented = fragmented
    }

    /// Sent to a multicast group (IPv4 224/4, IPv6 ff00::/8), not to one host.
    var multicast: Bool {
        if destination.contains(":") { return destination.lowercased().hasPrefix("ff") }
        guard let first = destination.split(separator: ".").first, let octet = Int(first) else { return false }
        return (224...239).contains(octet)
    }

    /// Records of a response that count as what the source claims: answers and additional ones.
    var claims: [DNSRecord] { message.isResponse ? message.answers + message.additional : [] }
}

/// A dictionary that never holds more than `capacity` entries: past it, the oldest half (by the
/// time each entry was last touched) goes. A flood of new keys costs memory up to the cap, never more.
struct BoundedTable<Key: Hashable, Value> {
    let capacity: Int
    private(set) var entries: [Key: (value: Value, touched: Double)] = [:]

    init(capacity: Int) { self.capacity = max(2, capacity) }

    subscript(key: Key) -> Value? { entries[key]?.value }

    var count: Int { entries.count }

    mutating func set(_ key: Key, _ value: Value, at time: Double) {
        entries[key] = (value, time)
        guard entries.count > capacity else { return }
        let keep = entries.sorted { $0.value.touched > $1.value.touched }.prefix(capacity / 2)
        entries = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }

    mutating func remove(_ key: Key) { entries[key] = nil }
}

/// The rules' findings at most once per key in a period: a fault seen a thousand times is one line.
struct Once<Key: Hashable> {
    var last: BoundedTable<Key, Double>
    let period: Double

    init(period: Double, capacity: Int = 4096) {
        last = BoundedTable(capacity: capacity)
        self.period = period
    }

    /// Whether `key` may be reported at `time` (and now counts as reported).
    mutating func admit(_ key: Key, at time: Double) -> Bool {
        if let previous = last[key], time - previous < period, time >= previous { return false }
        last.set(key, time, at: time)
        return true
    }
}

extension DNSRecord {
    /// The TTL as a cache reads it: RFC 2181 §8 has a TTL of 2^31 or more read as 0, a goodbye.
    /// Packet lines show the TTL as received; the rules, the table and a packet's meaning read this
    /// (the `ttl` rule alone judges the TTL as received, to name it).
    var cachedTTL: UInt32 { ttl >= TTLRule.wraps ? 0 : ttl }
}

extension RData {
    /// A hash of the data, for the keys of rules' tables: an NSEC record's type list by its length
    /// and its ends (hashing its thousands of types cost more than decoding the rest of the packet).
    var digest: Int {
        guard case let .nsec(next, types) = self else { return hashValue }
        var hasher = Hasher()
        hasher.combine(next)
        hasher.combine(types.count)
        hasher.combine(types.prefix(16))
        hasher.combine(types.suffix(16))
        return hasher.finalize()
    }
}

extension DNSName {
    /// Lowercased presentation form: a key for tables.
    var key: String { lowercased.shown }
}

extension BoundedTable: Sendable where Key: Sendable, Value: Sendable {}
extension Once: Sendable where Key: Sendable {}
