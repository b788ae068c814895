import NearbyBase

/// The events of `nearby watch` (docs/events.md): a `packet` per mDNS packet, a `finding` per
/// fault a rule names, and a `summary` at the end.
extension Events {
    /// `watch` has its packet socket (or its file) open: what comes next is seen.
    package struct Watching: EventBody {
        package static let event = "watching"
        /// The interface captured on; null: every interface (or a file).
        @Null package var interface: String?
        /// `--read`'s file; null when capturing.
        @Null package var file: String?

        package init(interface: String?, file: String?) {
            self.interface = interface
            self.file = file
        }
    }

    /// One question of a packet.
    package struct WatchQuestion: Codable, Sendable, Equatable {
        package var name: String
        package var type: String
        package var `class`: String
        /// The QU bit: the querier asks for a unicast answer (RFC 6762 §5.4).
        package var unicastResponse: Bool

        enum CodingKeys: String, CodingKey {
            case name, type, `class`
            case unicastResponse = "unicast_response"
        }
    }

    /// One record of a packet.
    package struct WatchRecord: Codable, Sendable, Equatable {
        package var name: String
        package var type: String
        package var `class`: String
        package var ttl: UInt32
        /// The record's data in presentation form (`10.99.0.2`, `0 0 39339 h2.local.`, TXT as quoted strings).
        package var data: String
        /// The cache-flush bit: a unique record, replacing what caches hold (RFC 6762 §10.2).
        package var cacheFlush: Bool

        enum CodingKeys: String, CodingKey {
            case name, type, `class`, ttl, data
            case cacheFlush = "cache_flush"
        }
    }

    /// What a packet means in DNS-SD terms.
    package struct Meaning: Codable, Sendable, Equatable {
        /// `announced`, `withdrawn`, `resolved`, `address`, `address-withdrawn`, `question`, `probe`.
        package var kind: String
        /// The service instance, host or question name it is about.
        package var name: String
        /// The service type (`_nearby._tcp.local.`), for instances and questions about a type.
        package var service: String?
        /// `resolved`: the host and port of the SRV record; `address`: the host.
        package var host: String?
        package var port: Int?
        /// `address`: the host's addresses in this packet.
        package var addresses: [String]?
    }

    package struct Packet: EventBody {
        package static let event = "packet"
        /// When it was captured (for `--read`, the file's time), RFC 3339 with milliseconds.
        package var captured: String
        @Null package var interface: String?
        package var source: String
        package var sourcePort: Int
        package var destination: String
        package var destinationPort: Int
        /// `query` or `response`.
        package var kind: String
        package var id: Int
        package var size: Int
        /// The TC bit.
        package var truncated: Bool
        package var questions: [WatchQuestion]
        package var answers: [WatchRecord]
        package var authority: [WatchRecord]
        package var additional: [WatchRecord]
        package var meaning: [Meaning]

        enum CodingKeys: String, CodingKey {
            case captured, interface, source, destination, kind, id, size, truncated, questions, answers, authority, additional, meaning
            case sourcePort = "source_port"
            case destinationPort = "destination_port"
        }
    }

    package struct Finding: EventBody, Equatable {
        package static let event = "finding"
        /// `malformed`, `conflict`, `rename`, `chatty-querier`, `ttl`, `oversize`, `truncated`, `reflector-echo`, `flapping`.
        package var rule: String
        /// The source address of the packet that broke the rule.
        package var host: String
        @Null package var interface: String?
        /// The record or question name concerned, if any.
        package var name: String?
        /// What was seen, for a person.
        package var evidence: String
        /// What to look at next.
        package var hint: String

        package init(rule: String, host: String, interface: String?, name: String? = nil, evidence: String, hint: String) {
            self.rule = rule
            self.host = host
            self.interface = interface
            self.name = name
            self.evidence = evidence
            self.hint = hint
        }
    }

    /// Live `watch` is behind a flood: it decodes 1 in `every` packets and only counts the rest
    /// (`WatchPace`), or the kernel drops packets before it reads them. Once a second while it
    /// lasts, then once with `every` 1 when every packet is decoded again.
    package struct WatchSampling: EventBody, Equatable {
        package static let event = "sampling"
        /// 1 in this many packets of the last second was decoded (1: every one, sampling ended).
        package var every: Int
        /// Packets read in the last second.
        package var packets: Int
        /// Of those, decoded (the rest counted, per source too, and not decoded).
        package var decoded: Int
        /// Packets counted and not decoded since watching began.
        package var skimmed: Int
        /// Packets the kernel dropped before watch read them, since watching began.
        package var dropped: Int

        package init(every: Int, packets: Int, decoded: Int, skimmed: Int, dropped: Int) {
            self.every = every
            self.packets = packets
            self.decoded = decoded
            self.skimmed = skimmed
            self.dropped = dropped
        }
    }

    /// The last line of `watch`: what it saw.
    package struct WatchSummary: EventBody {
        package static let event = "summary"
        package var packets: Int
        /// Packets that were not well-formed mDNS.
        package var malformed: Int
        /// Packets the kernel dropped before watch read them (its socket's buffer was full).
        package var dropped: Int
        /// Packets counted and not decoded: watch was sampling a flood (`WatchPace`).
        package var skimmed: Int
        /// Per source address, the packets it sent (the busiest first, at most 64).
        package var hosts: [HostCount]
        package var findings: Int
        /// Per rule, its findings.
        package var rules: [String: Int]
        /// Findings not printed: over the cap on findings per run.
        package var findingsSuppressed: Int
        package var exitStatus: Int32

        enum CodingKeys: String, CodingKey {
            case packets, malformed, dropped, skimmed, hosts, findings, rules
            case findingsSuppressed = "findings_suppressed"
            case exitStatus = "exit_status"
        }
    }

    package struct HostCount: Codable, Sendable, Equatable {
        package var address: String
        package var packets: Int
    }
}
