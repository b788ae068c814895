import NearbyDNS

/// What the link holds, as the packets told it: the live table of `watch` at a terminal. Hosts
/// and their addresses per interface, services and where they resolve, questions and whether
/// anyone answered — each with its TTL's end and when it was last heard. Capped like the rules'
/// tables.
package struct WatchTable: Sendable {
    package struct Host: Sendable, Equatable {
        package var name: String
        /// Addresses per interface ("" when the interface is not known).
        package var addresses: [String: [String]]
        package var expires: Double
        package var lastHeard: Double
    }

    package struct Service: Sendable, Equatable {
        package var instance: String
        package var type: String
        package var host: String?
        package var port: Int?
        package var source: String
        package var expires: Double
        package var lastHeard: Double
    }

    package struct Question: Sendable, Equatable {
        package var name: String
        package var type: String
        package var askedBy: String
        package var count: Int
        package var lastAsked: Double
        package var answered: Double?
    }

    static let capacity = 256
    private var hosts = BoundedTable<String, Host>(capacity: capacity)
    private var services = BoundedTable<String, Service>(capacity: capacity)
    private var questions = BoundedTable<String, Question>(capacity: capacity)

    package init() {}

    mutating func observe(_ observation: Observation) {
        let now = observation.time
        let message = observation.message
        if !message.isResponse {
            guard message.authority.isEmpty else { return }
            for question in message.questions {
                let key = question.name.key + " " + question.type.description
                var entry = questions[key] ?? Question(
                    name: question.name.shown, type: question.type.description, askedBy: observation.source, count: 0,
                    lastAsked: now, answered: nil)
                entry.count += 1
                entry.lastAsked = now
                entry.askedBy = observation.source
                questions.set(key, entry, at: now)
            }
            return
        }
        // A reply to a one-shot querier's port carries TTLs of at most 10 s (RFC 6762 §6.7), not
        // the record's own: it says the host is there, not for how long.
        let legacy = observation.destinationPort != FrameParser.mdnsPort
        for record in observation.claims {
            for type in [record.type.description, DNSType.any.description] {
                let key = record.name.key + " " + type
                // A reply to one host answers that host's question, not the link's.
                if var asked = questions[key], observation.multicast || asked.askedBy == observation.destination {
                    asked.answered = now
                    questions.set(key, asked, at: now)
                }
            }
            let ttl = record.cachedTTL
            let expires = now + Double(ttl)
            if legacy {
                if var host = hosts[record.name.key] {
                    host.lastHeard = now
                    hosts.set(record.name.key, host, at: now)
                }
                continue
            }
            switch record.data {
            case let .a(bytes), let .aaaa(bytes):
                let key = record.name.key, address = FrameParser.address(bytes[...])
                var host = hosts[key] ?? Host(name: record.name.shown, addresses: [:], expires: expires, lastHeard: now)
                var list = host.addresses[observation.interface ?? "", default: []]
                if ttl == 0 {
                    list.removeAll { $0 == address }
                } else if !list.contains(address), list.count < 8 {
                    list.append(address)
                }
                host.addresses[observation.interface ?? ""] = list.isEmpty ? nil : list
                host.expires = ttl == 0 && host.addresses.isEmpty ? now : max(host.expires, expires)
                host.lastHeard = now
                hosts.set(key, host, at: now)
            case let .ptr(instance) where PacketMeaning.serviceType(record.name) == record.name:
                let key = instance.key
                var service = services[key] ?? Service(
                    instance: instance.shown, type: record.name.shown, host: nil, port: nil, source: observation.source,
                    expires: expires, lastHeard: now)
                service.expires = expires
                service.lastHeard = now
                service.source = observation.source
                services.set(key, service, at: now)
            case let .srv(_, _, port, target):
                let key = record.name.key
                var service = services[key] ?? Service(
                    instance: record.name.shown, type: PacketMeaning.serviceType(record.name)?.shown ?? "",
                    host: nil, port: nil, source: observation.source, expires: expires, lastHeard: now)
                service.host = target.shown
                service.port = Int(port)
                service.lastHeard = now
                if ttl == 0 { service.expires = now }
                services.set(key, service, at: now)
            default:
                break
            }
        }
    }

    /// Hosts and services by name, questions latest first; what expired more than `linger` seconds
    /// ago is left out.
    package func snapshot(now: Double, linger: Double = 10) -> (hosts: [Host], services: [Service], questions: [Question]) {
        (
            hosts.entries.values.map { $0.value }.filter { $0.expires + linger >= now }.sorted { $0.name < $1.name },
            services.entries.values.map { $0.value }.filter { $0.expires + linger >= now }.sorted { ($0.type, $0.instance) < ($1.type, $1.instance) },
            questions.entries.values.map { $0.value }.sorted { $0.lastAsked > $1.lastAsked }
        )
    }
}
