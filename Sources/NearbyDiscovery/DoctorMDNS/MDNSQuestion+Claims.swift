import Foundation
import NIOCore
import NearbyDNS
import NearbyBase

/// A split brain: two hosts claiming one name with multicast blocked between them, so that
/// neither daemon hears the other's claim and neither renames. doctor asks its neighbours (the
/// hosts in this host's ARP and IPv6 neighbour tables) for this host's own name by unicast to
/// their UDP 5353, which needs no multicast path: one that answers with its own address claims it.
extension MDNSQuestion {
    /// Another responder's answer for a host name: who answered, and the addresses it gave.
    package struct Claim: Sendable, Equatable {
        package var source: String
        package var addresses: [String]

        package init(source: String, addresses: [String]) {
            self.source = source
            self.addresses = addresses
        }
    }

    /// What asking the neighbours for `name` showed: how many were asked, who claimed it.
    package struct Claims: Sendable, Equatable {
        package var name: String
        package var asked: Int
        package var claims: [Claim]

        package init(name: String, asked: Int, claims: [Claim]) {
            self.name = name
            self.asked = asked
            self.claims = claims
        }
    }

    /// The most neighbours asked per IP family: a neighbour table may be a whole office's.
    package static let maxNeighboursAsked = 32

    /// Asks each of `neighbours` (at most `maxNeighboursAsked` per IP family), by unicast to its
    /// UDP `port`, for `name`'s A and AAAA records: twice within `wait`, and every answer that
    /// gives an address for `name` is a claim (at most one per source).
    package static func askClaims(name: String, neighbours: [String], wait: Duration, port: Int = 5353) async -> Claims {
        let v4 = neighbours.filter { Subnets.bytes($0)?.count == 4 }.prefix(maxNeighboursAsked)
        let v6 = neighbours.filter { Subnets.bytes($0)?.count == 16 }.prefix(maxNeighboursAsked)
        guard let host = try? DNSName(name) else { return Claims(name: name, asked: 0, claims: []) }
        let message = query([DNSQuestion(name: host, type: .a, qClass: .in), DNSQuestion(name: host, type: .aaaa, qClass: .in)])
        guard let wire = try? message.encode() else { return Claims(name: name, asked: 0, claims: []) }
        let found = await withTaskGroup(of: [Claim].self) { tasks in
            for (family, targets) in [(false, Array(v4)), (true, Array(v6))] where !targets.isEmpty {
                tasks.addTask {
                    let claims = Locked<[Claim]>([])
                    try? await exchange(
                        v6: family, multicastVia: nil, port: port, wait: wait, repeats: 2,
                        sends: { _ in targets.compactMap { socketAddress($0, port: port).map { Send(to: $0, wire: wire) } } }
                    ) { answer, source in
                        guard answer.id == message.id else { return .more }
                        let addresses = Self.addresses(of: host, in: answer)
                        guard !addresses.isEmpty else { return .more }
                        claims.withLock { list in
                            if !list.contains(where: { $0.source == source }) { list.append(Claim(source: source, addresses: addresses)) }
                        }
                        return .more
                    }
                    return claims.withLock { $0 }
                }
            }
            var all: [Claim] = []
            for await claims in tasks { all += claims }
            return all
        }
        return Claims(name: name, asked: v4.count + v6.count, claims: found)
    }

    /// The addresses an answer gives for `host` (its A and AAAA records, answers and additional).
    package static func addresses(of host: DNSName, in message: DNSMessage) -> [String] {
        let wanted = text(host).lowercased()
        var found: [String] = []
        for record in message.answers + message.additional where text(record.name).lowercased() == wanted {
            let address: String?
            switch record.data {
            case let .a(bytes): address = bytes.count == 4 ? bytes.map(String.init).joined(separator: ".") : nil
            case let .aaaa(bytes): address = ipv6Text(bytes)
            default: address = nil
            }
            if let address, !found.contains(address) { found.append(address) }
        }
        return found
    }

    static func ipv6Text(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 16, let address = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0) else { return nil }
        return address.ipAddress
    }
}
