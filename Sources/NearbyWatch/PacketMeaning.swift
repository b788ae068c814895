import NearbyBase
import NearbyDNS

/// What a packet says in DNS-SD terms (RFC 6763): a service announced or withdrawn (a PTR from a
/// type to an instance, or its goodbye, TTL 0), an instance resolved (its SRV: host and port), a
/// host's addresses, a question about a name or type, a probe for a name about to be claimed.
package enum PacketMeaning {
    package static func of(_ message: DNSMessage) -> [Events.Meaning] {
        var meanings: [Events.Meaning] = []
        var seen = Set<String>()
        func add(_ meaning: Events.Meaning) {
            guard seen.insert(meaning.kind + " " + meaning.name.lowercased()).inserted else { return }
            meanings.append(meaning)
        }
        if !message.isResponse {
            let probing = !message.authority.isEmpty
            for question in message.questions {
                add(Events.Meaning(
                    kind: probing ? "probe" : "question", name: question.name.shown,
                    service: serviceType(question.name).map(\.shown)))
            }
            return meanings
        }
        let records = message.answers + message.additional
        for record in records {
            switch record.data {
            case let .ptr(instance) where serviceType(record.name) == record.name:
                add(Events.Meaning(kind: record.cachedTTL == 0 ? "withdrawn" : "announced", name: instance.shown, service: record.name.shown))
            case let .srv(_, _, port, target):
                if record.cachedTTL == 0 {
                    add(Events.Meaning(kind: "withdrawn", name: record.name.shown, service: serviceType(record.name)?.shown))
                } else {
                    add(Events.Meaning(
                        kind: "resolved", name: record.name.shown, service: serviceType(record.name)?.shown,
                        host: target.shown, port: Int(port)))
                }
            default:
                break
            }
        }
        var addresses: [DNSName: (live: [String], gone: [String])] = [:]
        var order: [DNSName] = []
        for record in records {
            switch record.data {
            case let .a(bytes), let .aaaa(bytes): collect(record, FrameParser.address(bytes[...]), into: &addresses, order: &order)
            default: continue
            }
        }
        for name in order {
            guard let entry = addresses[name] else { continue }
            if !entry.live.isEmpty {
                add(Events.Meaning(kind: "address", name: name.shown, host: name.shown, addresses: entry.live))
            }
            if !entry.gone.isEmpty {
                add(Events.Meaning(kind: "address-withdrawn", name: name.shown, host: name.shown, addresses: entry.gone))
            }
        }
        return meanings
    }

    private static func collect(
        _ record: DNSRecord, _ address: String, into addresses: inout [DNSName: (live: [String], gone: [String])], order: inout [DNSName]
    ) {
        if addresses[record.name] == nil { order.append(record.name) }
        var entry = addresses[record.name] ?? ([], [])
        if record.cachedTTL == 0 { entry.gone.append(address) } else { entry.live.append(address) }
        addresses[record.name] = entry
    }

    /// The service type a name is or is under: `_nearby._tcp.local.` for `x._nearby._tcp.local.`
    /// and for itself (also with a subtype, `_sub`); nil for a host name.
    package static func serviceType(_ name: DNSName) -> DNSName? {
        let labels = name.labels
        for index in labels.indices.dropLast() {
            let proto = labels[index + 1].map { (65...90).contains($0) ? $0 + 32 : $0 }
            guard labels[index].first == UInt8(ascii: "_"), proto == Array("_tcp".utf8) || proto == Array("_udp".utf8) else { continue }
            return try? DNSName(labels: Array(labels[index...]))
        }
        return nil
    }
}
