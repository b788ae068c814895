import Foundation
import NearbyBase

/// The words of `doctor`'s `multicast-path` and `ghost` checks, from what the direct questions
/// (`MDNSQuestion`), the daemon and a TCP connection showed: pure, so every case is tested.
extension DoctorCheck {
    static let filteredHint =
        "multicast is filtered between the two hosts: on Wi-Fi, turn off client (AP) isolation; on a managed switch, "
            + "give IGMP snooping a querier (or turn snooping off); look for a firewall on the path dropping UDP to 224.0.0.251:5353 and ff02::fb"

    /// `multicast-path`. `daemonSees`: whether this host's daemon lists any of the instances
    /// PEER's responder named (nil: it named none, nothing to compare). `explained`: another check
    /// already says why multicast cannot pass (another subnet, a ghost): `skip`.
    /// `byAddress`: the way around it, `nearby invite HOST:PORT`.
    package static func multicastPath(
        _ outcome: MDNSQuestion.Outcome, peer name: String, address: String, registrationType: String,
        daemonSees: Bool?, explained: String? = nil, byAddress: String? = nil
    ) -> DoctorCheck {
        if let explained { return DoctorCheck("multicast-path", .skip, "not judged: \(explained)") }
        let waited = String(format: "%.1f s", Double(outcome.waited / .milliseconds(1)) / 1000)
        let meanwhile = byAddress.map { ". Meanwhile this host reaches \(name) by address, no multicast needed: '\(Spelling.command(.invite, $0))'" } ?? ""
        guard let unicast = outcome.unicast else {
            if let failure = outcome.failure {
                return DoctorCheck("multicast-path", .warn, "could not ask \(name)'s responder at \(address): \(failure)",
                                   hint: "doctor asks from this host's address on the peer's subnet: check this host's routes ('ip route', 'ip -6 route')")
            }
            if outcome.cut {
                return DoctorCheck("multicast-path", .warn, "not checked: doctor's --timeout ran out before \(name)'s responder at \(address) answered",
                                   hint: "run doctor again with a longer --timeout")
            }
            if outcome.multicast != nil {
                return DoctorCheck("multicast-path", .warn,
                                   "\(name)'s responder at \(address) answers a question sent by multicast, but not one sent to it directly (unicast to UDP 5353)",
                                   hint: "a firewall on \(name)'s host drops unicast UDP 5353 (multicast passes): 'nft list ruleset' there")
            }
            return DoctorCheck(
                "multicast-path", .fail,
                "\(name)'s mDNS responder at \(address) answered neither a question sent to it directly (unicast to UDP 5353) nor one sent by multicast, in \(waited): "
                    + "its responder is down, or unicast to UDP 5353 is blocked",
                hint: "on \(name)'s host: is avahi-daemon running ('\(Spelling.command(.doctor))' there)? does a firewall drop UDP 5353 ('nft list ruleset')?")
        }
        let what = describe(unicast, registrationType: registrationType)
        guard outcome.multicastSent else {
            return DoctorCheck("multicast-path", .warn,
                               "\(name)'s responder at \(address) answers a question sent to it directly (\(what)); not asked by multicast: no interface of this host is on its subnet",
                               hint: "mDNS only reaches hosts on this host's subnets")
        }
        guard outcome.multicast != nil else {
            let cache = daemonSees == true ? "; this host's daemon still lists it, from its cache" : daemonSees == false ? "; none of its announcements reach this host's daemon either" : ""
            return DoctorCheck(
                "multicast-path", .fail,
                "multicast is filtered between this host and \(name): its responder at \(address) answers a question sent to it directly (\(what)), "
                    + "but not the same question sent by multicast to \(address.contains(":") ? "ff02::fb" : "224.0.0.251") in \(waited)\(cache)",
                hint: filteredHint + meanwhile)
        }
        if daemonSees == false {
            return DoctorCheck(
                "multicast-path", .fail,
                "multicast from \(name) does not reach this host: its responder at \(address) answers a question sent to it directly and one sent by multicast (\(what)), "
                    + "but none of its announcements reached this host's daemon",
                hint: filteredHint + " (from \(name) towards this host); on this host, the firewall check names a local rule if there is one" + meanwhile)
        }
        return DoctorCheck("multicast-path", .ok,
                           "\(name)'s responder at \(address) answers a question sent to it directly and the same question sent by multicast (\(what)): multicast passes between the two hosts")
    }

    /// `host h2.local, lists 2 instances of _x._tcp`.
    static func describe(_ answer: MDNSQuestion.Answer, registrationType: String) -> String {
        var words: [String] = []
        if let host = answer.hosts.first { words.append("host \(host)") }
        words.append(answer.instances.isEmpty
            ? "nothing on \(registrationType)"
            : "\(answer.instances.count) instance\(answer.instances.count == 1 ? "" : "s") of \(registrationType)")
        return words.joined(separator: ", ")
    }

    /// `ghost`, for a peer the daemon lists: a ghost when nothing answers where it is listed — no
    /// direct mDNS question, no TCP connection. nil when the daemon does not list it.
    /// `lastHeard`: when a nearby command on this host last saw it (recent-peers), if ever;
    /// `since`: when doctor started looking.
    package static func ghost(
        listed: Bool, peer name: String, address: String, port: Int, outcome: MDNSQuestion.Outcome, connected: Bool,
        connectReason: String?, lastHeard: Date?, since: Date, now: Date = Date()
    ) -> DoctorCheck? {
        guard listed else { return nil }
        if connected || outcome.unicast != nil || outcome.multicast != nil {
            let answers = [outcome.unicast != nil || outcome.multicast != nil ? "its mDNS responder answers" : nil,
                           connected ? "it takes a TCP connection on port \(port)" : nil].compactMap { $0 }
            return DoctorCheck("ghost", .ok, "\(name) is listed by this host's daemon and is there: \(answers.joined(separator: " and "))")
        }
        if outcome.cut {
            return DoctorCheck("ghost", .warn, "not checked: doctor's --timeout ran out before \(name) at \(address) answered or not",
                               hint: "run doctor again with a longer --timeout")
        }
        let formatter = ISO8601DateFormatter()
        let heard = lastHeard.map { "last heard \(formatter.string(from: $0)) (recent-peers)" }
            ?? "not heard from since doctor began looking \(Int(now.timeIntervalSince(since).rounded())) s ago (\(formatter.string(from: since)))"
        return DoctorCheck(
            "ghost", .fail,
            "\(name) is a ghost: this host's daemon still lists it at \(address), but nothing answers there — no answer to a direct mDNS question "
                + "at \(address):5353 and no TCP connection to port \(port)\(connectReason.map { " (\($0))" } ?? ""); \(heard). Its host went away "
                + "(crashed, lost power, left the network) without a goodbye, and the daemon keeps its records until they expire",
            hint: "nothing to fix on this host: the daemon drops it when its records expire (avahi asks again before their TTL ends); to drop it now, "
                + "restart avahi-daemon here ('sudo systemctl restart avahi-daemon'); if \(name) should be there, start its node again",
            exitStatus: .peerNotFound)
    }
}
