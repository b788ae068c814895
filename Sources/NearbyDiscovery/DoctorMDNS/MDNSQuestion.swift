import Foundation
import NIOCore
import NIOPosix
import NearbyDNS
import NearbyBase

/// `doctor`'s direct questions to a peer's mDNS responder (RFC 6762 §5.5 and §6.7, "legacy"
/// one-shot queries): from a port of our own, never 5353 (that would make doctor a second
/// responder), once by unicast to PEER:5353 and once by multicast to 224.0.0.251:5353. A responder
/// answers a query from another port than 5353 by unicast, to that port, so both answers come
/// back here without this host's daemon: the unicast one says the peer's responder is up and
/// reachable, the multicast one that multicast from here reaches it.
package enum MDNSQuestion {
    /// The most one answer may be (RFC 6762 §17: 9000 bytes), and the most answers read.
    package static let maxAnswerBytes = 9000
    package static let maxAnswers = 64
    /// How long the questions wait for answers unless `NEARBY_MDNS_QUESTION_TIMEOUT` says (seconds).
    package static let defaultWait: Duration = .seconds(1)

    package static func wait(environment: [String: String]) -> Duration {
        Duration.seconds(parsing: environment["NEARBY_MDNS_QUESTION_TIMEOUT"]).map { min($0, .seconds(30)) } ?? defaultWait
    }

    /// What one answer said that doctor uses.
    package struct Answer: Sendable, Equatable {
        /// Who answered (`10.99.0.2`).
        package var source: String
        /// Host names it gave: the reverse-address PTR's target, SRV targets (`h2.local`).
        package var hosts: [String]
        /// Instances of the service type it lists (the first label of each PTR target).
        package var instances: [String]
        /// The host its SRV record of the asked instance names, when it gave one.
        package var instanceHost: String?
        /// Each listed instance's port (its SRV record) and display name (its TXT record's `_d`),
        /// when the answer carried them (a responder adds them to a PTR answer, RFC 6763 §12.1).
        package var ports: [String: Int] = [:]
        package var names: [String: String] = [:]

        package init(source: String, hosts: [String] = [], instances: [String] = [], instanceHost: String? = nil) {
            self.source = source
            self.hosts = hosts
            self.instances = instances
            self.instanceHost = instanceHost
        }
    }

    package struct Outcome: Sendable, Equatable {
        /// PEER answered the question sent to it by unicast.
        package var unicast: Answer?
        /// PEER answered the question sent by multicast.
        package var multicast: Answer?
        /// Others that answered the multicast question with a record of PEER's instance.
        package var others: [Answer] = []
        /// false when no interface of this host is on PEER's subnet: no multicast question was sent.
        package var multicastSent: Bool
        /// How long it waited, and whether doctor's deadline cut the wait short.
        package var waited: Duration
        package var cut: Bool = false
        /// Why the questions could not be sent (no route, no socket): nothing was asked.
        package var failure: String? = nil
        /// The address of PEER's that answered the question sent to it directly (nil: none did).
        package var answeredAt: String? = nil

        package init(unicast: Answer?, multicast: Answer?, others: [Answer] = [], multicastSent: Bool, waited: Duration, cut: Bool = false) {
            self.unicast = unicast
            self.multicast = multicast
            self.others = others
            self.multicastSent = multicastSent
            self.waited = waited
            self.cut = cut
        }
    }

    /// Where doctor asks PEER's responder: an IPv4 address of it on one of this host's subnets
    /// (else its first IPv4 address), and this host's address there, the interface the multicast
    /// question leaves by (nil when none is on its subnet). Without an IPv4 address (an IPv6-only
    /// link) an IPv6 one: link-local by the interface its zone names (`fe80::2%nb0`), else one on
    /// a subnet of this host; `via` is then this host's address there with the interface as its
    /// zone (`fe80::1%nb0`), which the multicast question leaves by. nil without a usable address.
    package static func route(_ addresses: [String], interfaces: [NetworkInterface]) -> (address: String, via: String?)? {
        let up = interfaces.filter(\.up)
        let networks = up.flatMap(\.networks)
        let via = { (address: String) in networks.first { Subnets.contains($0, address) }.map { String($0.split(separator: "/").first ?? "") } }
        let v4 = addresses.filter { Subnets.bytes($0)?.count == 4 }
        // One on this host's subnets first: the others may be a container's or a VPN's.
        if let address = v4.first(where: { via($0) != nil }) { return (address, via(address)) }
        if let address = v4.first { return (address, nil) }
        let v6 = addresses.filter { Subnets.bytes($0)?.count == 16 }
        /// This host's address on `interface` inside the same network as `address`, with the zone.
        func own(_ interface: NetworkInterface, for address: String) -> String? {
            interface.networks.first { Subnets.contains($0, address) }.map { "\($0.split(separator: "/").first ?? "")%\(interface.name)" }
        }
        for address in v6 where Subnets.isLinkLocal(address) {
            let zone = address.split(separator: "%", maxSplits: 1).dropFirst().first.map(String.init)
            if let interface = up.first(where: { $0.name == zone }), let via = own(interface, for: address) { return (address, via) }
        }
        for address in v6 where !Subnets.isLinkLocal(address) {
            if let via = up.lazy.compactMap({ own($0, for: address) }).first { return (address, via) }
        }
        // A link-local address needs its zone to be dialled at all.
        return v6.first { !Subnets.isLinkLocal($0) }.map { ($0, nil) }
    }

    /// `_nearby._tcp.local.`'s PTR, the reverse name of `address`, and the SRV of `instance`.
    package static func questions(address: String, registrationType: String, instance: String?, unicastResponse: Bool) -> [DNSQuestion] {
        let qClass = unicastResponse ? DNSClass(rawValue: 0x8001) : .in
        var questions: [DNSQuestion] = []
        if let type = try? DNSName("\(registrationType).local") { questions.append(DNSQuestion(name: type, type: .ptr, qClass: qClass)) }
        if let reverse = reverseName(address) { questions.append(DNSQuestion(name: reverse, type: .ptr, qClass: qClass)) }
        if let instance, let type = try? DNSName("\(registrationType).local"), let name = try? type.prepending(instance) {
            questions.append(DNSQuestion(name: name, type: .srv, qClass: qClass))
        }
        return questions
    }

    /// `2.0.99.10.in-addr.arpa.` for `10.99.0.2`, the nibbles of an IPv6 address under `ip6.arpa.`.
    package static func reverseName(_ address: String) -> DNSName? {
        guard let bytes = Subnets.bytes(address) else { return nil }
        if bytes.count == 4 { return try? DNSName(bytes.reversed().map(String.init).joined(separator: ".") + ".in-addr.arpa") }
        let nibbles = bytes.reversed().flatMap { [String($0 & 0x0F, radix: 16), String($0 >> 4, radix: 16)] }
        return try? DNSName(nibbles.joined(separator: ".") + ".ip6.arpa")
    }

    static func text(_ name: DNSName) -> String {
        name.labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
    }

    /// `peer-id` for `peer-id._nearby._tcp.local.` (`type` lowercased, with `.local`): the instance.
    static func instanceOf(_ name: DNSName, type: String) -> String? {
        guard let first = name.labels.first, text(name).lowercased() == "\(String(decoding: first, as: UTF8.self).lowercased()).\(type)" else { return nil }
        return String(decoding: first, as: UTF8.self)
    }

    /// What an answer from `source` says about the service type, the address and the instance.
    package static func read(_ message: DNSMessage, source: String, registrationType: String, instance: String?) -> Answer {
        var answer = Answer(source: source)
        let type = "\(registrationType).local".lowercased()
        let instanceName = instance.map { "\($0).\(type)".lowercased() }
        for record in message.answers + message.additional {
            let name = text(record.name).lowercased()
            switch record.data {
            case let .ptr(target):
                if name == type, let first = target.labels.first {
                    let found = String(decoding: first, as: UTF8.self)
                    if !answer.instances.contains(found) { answer.instances.append(found) }
                } else if name.hasSuffix(".in-addr.arpa") || name.hasSuffix(".ip6.arpa") {
                    let host = text(target)
                    if !answer.hosts.contains(host) { answer.hosts.append(host) }
                }
            case let .srv(_, _, port, target):
                let host = text(target)
                if !answer.hosts.contains(host) { answer.hosts.append(host) }
                if name == instanceName { answer.instanceHost = host }
                if let listed = instanceOf(record.name, type: type) { answer.ports[listed] = Int(port) }
            case let .txt(strings):
                let key = Array("\(TXTRecord.displayNameKey)=".utf8)
                if let listed = instanceOf(record.name, type: type), let entry = strings.first(where: { $0.starts(with: key) }) {
                    answer.names[listed] = String(decoding: entry.dropFirst(key.count), as: UTF8.self)
                }
            default:
                continue
            }
        }
        return answer
    }
}
