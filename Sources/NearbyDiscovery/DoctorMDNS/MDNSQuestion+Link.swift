import Foundation
import NIOCore
import NIOPosix
import NearbyDNS
import NearbyBase

/// `doctor NAME` when this host's daemon does not list NAME: one one-shot question for the service
/// type's PTR, by multicast to 224.0.0.251 from a port of doctor's own, out of each IPv4 multicast
/// interface. Every responder that hears it answers by unicast to that port, so an answer comes back
/// even when multicast from that responder towards this host is dropped — the one-way fault a
/// daemon that never hears the peer cannot name.
extension MDNSQuestion {
    /// This host's IPv4 addresses the question leaves from: one per up, multicast, non-loopback interface.
    package static func linkSources(_ interfaces: [NetworkInterface]) -> [String] {
        interfaces.filter { $0.up && $0.multicast && !$0.loopback }.compactMap { interface in
            interface.addresses.first { Subnets.bytes($0)?.count == 4 }
        }
    }

    /// The answers to one multicast question for `registrationType`'s PTR, from each of `sources`,
    /// read for `wait` (at most `maxAnswers`, each bounded). Empty when nothing could be sent.
    package static func askLink(sources: [String], registrationType: String, wait: Duration, port: Int = 5353) async -> [Answer] {
        guard let type = try? DNSName("\(registrationType).local"),
              let group = try? SocketAddress(ipAddress: "224.0.0.251", port: port) else { return [] }
        return await withTaskGroup(of: [Answer].self) { tasks in
            for source in sources.prefix(8) {
                tasks.addTask {
                    let message = query([DNSQuestion(name: type, type: .ptr, qClass: DNSClass(rawValue: 0x8001))])
                    guard let wire = try? message.encode() else { return [] }
                    return await collect(from: source, to: group, wire: wire, id: message.id, registrationType: registrationType, wait: wait)
                }
            }
            var all: [Answer] = []
            for await answers in tasks { all += answers }
            return all
        }
    }

    static func collect(
        from source: String, to group: SocketAddress, wire: [UInt8], id: UInt16, registrationType: String, wait: Duration
    ) async -> [Answer] {
        let answers = Answers()
        do {
            try await exchange(
                v6: false, multicastVia: source, port: group.port ?? 5353, wait: wait, repeats: 2,
                sends: { ready in ready ? [Send(to: group, wire: wire)] : [] }
            ) { message, from in
                guard message.id == id else { return .more }
                answers.list.append(read(message, source: from, registrationType: registrationType, instance: nil))
                return .more
            }
        } catch {
            // Cancelled, or the question could not be sent: what was collected stands.
        }
        return answers.list
    }

    /// What the reading task found (it is the only writer while it runs; read after it ends).
    private final class Answers: @unchecked Sendable {
        var list: [Answer] = []
    }
}
