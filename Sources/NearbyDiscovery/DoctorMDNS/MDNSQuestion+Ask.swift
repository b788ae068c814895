import Foundation
import NIOCore
import NIOPosix
import NearbyDNS
import NearbyBase
#if canImport(Glibc)
import Glibc
#endif

extension MDNSQuestion {
    /// Asks PEER's responder at `address` directly and by multicast (from `via`, this host's
    /// address on PEER's subnet; nil: no multicast question), for `wait` at most: three times
    /// each, until PEER answered both. Every answer is bounded, at most `maxAnswers` are read.
    /// `also`: PEER's other addresses of the same family (at most 15 more), asked directly too: a
    /// daemon's cache may still hold an address the host gave up, and the host answers from the
    /// one it has (`Outcome.answeredAt`).
    /// How long, after PEER answered both questions, answers from other responders are still read.
    static let othersGrace = Duration.milliseconds(300)

    package static func ask(
        address: String, also: [String] = [], via: String?, registrationType: String, instance: String?, wait: Duration,
        port: Int = 5353
    ) async -> Outcome {
        let started = ContinuousClock.now
        let unicastQuery = query(questions(address: address, registrationType: registrationType, instance: instance, unicastResponse: false))
        var multicastQuery = query(questions(address: address, registrationType: registrationType, instance: instance, unicastResponse: true))
        if multicastQuery.id == unicastQuery.id { multicastQuery.id &+= 1 }
        let (unicastID, multicastID) = (unicastQuery.id, multicastQuery.id)
        let v6 = address.contains(":")
        let hosts = [address] + also.filter { $0 != address && $0.contains(":") == v6 }.prefix(15)
        let peers = hosts.compactMap { socketAddress($0, port: port) }
        guard socketAddress(address, port: port) != nil,
              let unicastWire = try? unicastQuery.encode(), let multicastWire = try? multicastQuery.encode()
        else { return Outcome(unicast: nil, multicast: nil, multicastSent: false, waited: .zero) }
        let group: SocketAddress? = via == nil ? nil : try? SocketAddress(ipAddress: v6 ? "ff02::fb" : "224.0.0.251", port: port)
        let collected = Collected()
        var failure: String?
        do {
            // Once PEER answered both, a moment more for another responder's answer to the same
            // multicast question (one that answers for PEER's instance: `conflicts`).
            try await exchange(
                v6: v6, multicastVia: group == nil ? nil : via, port: port, wait: wait, repeats: 3, grace: othersGrace,
                sends: { ready in
                    collected.multicastSent = group != nil && ready
                    return peers.map { Send(to: $0, wire: unicastWire) } + (collected.multicastSent ? group.map { [Send(to: $0, wire: multicastWire)] } ?? [] : [])
                }
            ) { message, source in
                let answer = Self.read(message, source: source, registrationType: registrationType, instance: instance)
                let from = hosts.first { Subnets.bytes($0) == Subnets.bytes(source) }
                let fromPeer = from != nil
                if message.id == unicastID, fromPeer {
                    if collected.unicast == nil { collected.answeredAt = from }
                    collected.unicast = collected.unicast ?? answer
                } else if message.id == multicastID {
                    if fromPeer {
                        collected.multicast = collected.multicast ?? answer
                    } else if answer.instanceHost != nil, collected.others.count < 8 {
                        collected.others.append(answer)
                    }
                }
                guard collected.unicast != nil, collected.multicast != nil || !collected.multicastSent else { return .more }
                return collected.multicastSent ? .settle : .done
            }
        } catch is CancellationError {
            // Cancelled: what was collected stands.
        } catch {
            // A socket that cannot be opened, or a question that cannot be sent (no route).
            failure = ErrorWords.describe(error)
        }
        var outcome = Outcome(
            unicast: collected.unicast, multicast: collected.multicast, others: collected.others,
            multicastSent: collected.multicastSent, waited: ContinuousClock.now - started)
        outcome.answeredAt = collected.answeredAt
        if outcome.unicast == nil, outcome.multicast == nil { outcome.failure = failure }
        return outcome
    }

    /// `address` as a socket address; a link-local IPv6 one keeps its zone as the scope
    /// (`fe80::2%nb0`: numeric, so getaddrinfo reads it without asking any resolver).
    static func socketAddress(_ address: String, port: Int) -> SocketAddress? {
        guard address.contains("%") else { return try? SocketAddress(ipAddress: address, port: port) }
        guard Subnets.bytes(address)?.count == 16 else { return nil }
        return try? SocketAddress.makeAddressResolvingHost(address, port: port)
    }

    /// What the reading task found (it is the only writer while it runs; read after it ends).
    private final class Collected: @unchecked Sendable {
        var unicast: Answer?
        var multicast: Answer?
        var others: [Answer] = []
        var multicastSent = false
        var answeredAt: String?
    }

    static func query(_ questions: [DNSQuestion]) -> DNSMessage {
        var message = DNSMessage(id: UInt16.random(in: 1...UInt16.max))
        message.questions = questions
        return message
    }

    /// Multicast out of the interface of `via` (an address of this host), TTL 255 (RFC 6762 §11),
    /// not looped back to this host's own daemon. false when that cannot be set.
    static func multicastOptions(_ channel: Channel, via: String?, v6: Bool) async -> Bool {
        guard let via, let provider = channel as? SocketOptionProvider else { return false }
        do {
            if v6 {
                let zone = via.split(separator: "%", maxSplits: 1).dropFirst().first.map(String.init)
                guard let zone else { return false }
                let index = if_nametoindex(zone)
                guard index != 0 else { return false }
                try await provider.setIPv6MulticastIF(CUnsignedInt(index)).get()
                try await provider.setIPv6MulticastHops(255).get()
                try await provider.setIPv6MulticastLoop(0).get()
            } else {
                var address = in_addr()
                guard inet_pton(AF_INET, via, &address) == 1 else { return false }
                try await provider.setIPMulticastIF(address).get()
                try await provider.setIPMulticastTTL(255).get()
                try await provider.setIPMulticastLoop(0).get()
            }
            return true
        } catch {
            return false
        }
    }
}
