import Foundation
import NearbyBase

/// `doctor`'s `addresses` and `conflicts` checks: pure, from what was tried and read.
extension DoctorCheck {
    /// One advertised address and how a TCP connection to it went (nil reason: it connected).
    package struct AddressTrial: Sendable, Equatable {
        package var address: String
        package var failure: String?
        package init(address: String, failure: String?) {
            self.address = address
            self.failure = failure
        }
    }

    /// Address ranges that are usually another interface than the LAN: a container bridge, a VPN.
    package static let namedRanges: [(network: String, name: String)] = [
        ("172.17.0.0/16", "docker's default bridge (docker0)"),
        ("172.16.0.0/12", "the private range docker gives its networks (br-*)"),
        ("100.64.0.0/10", "the shared range VPNs such as Tailscale use (tailscale0)"),
        ("fd7a:115c:a1e0::/48", "Tailscale's IPv6 range (tailscale0)"),
        ("192.168.122.0/24", "libvirt's default network (virbr0)"),
        ("10.0.3.0/24", "LXC's default bridge (lxcbr0)"),
        ("10.8.0.0/24", "OpenVPN's default tunnel (tun0)"),
        ("169.254.0.0/16", "IPv4 link-local (an interface without DHCP)"),
    ]

    /// The name of the first known range `address` is in.
    package static func rangeName(_ address: String) -> String? {
        namedRanges.first { Subnets.contains($0.network, address) }?.name
    }

    /// `addresses`: each advertised address of a found peer, which take a connection and which do
    /// not, the unreachable ones placed in a docker/VPN range where they are in one.
    /// `subnets`: this host's (`Subnets.ours`), to say an address is on none of them.
    package static func addresses(_ trials: [AddressTrial], peer name: String, port: Int, interfaces: [NetworkInterface]) -> DoctorCheck {
        let working = trials.filter { $0.failure == nil }.map(\.address)
        let failing = trials.filter { $0.failure != nil }
        guard !failing.isEmpty else {
            return DoctorCheck("addresses", .ok, "each address \(name) advertises takes a TCP connection on port \(port): \(working.joined(separator: " "))")
        }
        let words = failing.map { trial -> String in
            var where_: [String] = []
            if let range = rangeName(trial.address) { where_.append(range) }
            if Subnets.bytes(trial.address) != nil, !Subnets.isLinkLocal(trial.address),
               !interfaces.contains(where: { $0.up && $0.networks.contains { Subnets.contains($0, trial.address) } }) {
                where_.append("on none of this host's subnets")
            }
            let place = where_.isEmpty ? "" : " (\(where_.joined(separator: ", ")))"
            return "\(trial.address)\(place): \(trial.failure ?? "no answer")"
        }
        guard !working.isEmpty else {
            return DoctorCheck("addresses", .skip, "no address \(name) advertises takes a connection (see connect): " + words.joined(separator: "; "))
        }
        return DoctorCheck(
            "addresses", .warn,
            "\(name) advertises addresses this host cannot reach: \(words.joined(separator: "; ")); reachable: \(working.joined(separator: " "))",
            hint: "on \(name)'s host, let avahi-daemon announce only the interfaces peers can reach: allow-interfaces=IFACE "
                + "(or deny-interfaces=docker0,tun0,wg0) in /etc/avahi/avahi-daemon.conf, then restart it; meanwhile nearby tries every address, "
                + "so the reachable one still works, more slowly")
    }

    /// `conflicts`: this host's daemon announces another host name than its configuration says
    /// (it renamed after a conflict: `h1` → `h1-2`), or another responder answers for PEER's
    /// instance with another host. `current`: the name the daemon announces (from doctor's probe);
    /// `configured`: its configuration's `host-name=`, else this host's name, and where it came from.
    /// `claims`: what this host's neighbours answered, asked directly for its name (nil: not
    /// asked); one that gives an address not in `ownAddresses` is a split brain.
    package static func conflicts(
        current: String?, configured: String?, configuredFrom: String, instance: String? = nil, peerHost: String? = nil,
        others: [MDNSQuestion.Answer] = [], claims: MDNSQuestion.Claims? = nil, ownAddresses: [String] = []
    ) -> DoctorCheck {
        let short = { (name: String) -> String in
            var name = name.lowercased()
            while name.hasSuffix(".") { name.removeLast() }
            if name.hasSuffix(".local") { name.removeLast(6) }
            return name
        }
        var problems: [String] = []
        var hints: [String] = []
        if let current, let configured {
            let (now, meant) = (short(current), short(configured))
            if now != meant, now.hasPrefix(meant + "-"), Int(now.dropFirst(meant.count + 1)) != nil {
                problems.append("this host's daemon announces itself as \(now).local, not \(meant).local as configured (\(configuredFrom)): "
                    + "it renamed after another host on the link claimed \(meant).local")
                hints.append("another host on this link is also named \(meant): 'avahi-resolve -n \(meant).local' shows its address; give one of them "
                    + "another name (host-name= in avahi-daemon.conf, or 'hostnamectl hostname NAME') and restart avahi-daemon")
            }
        }
        if let instance {
            let mine = peerHost.map(short)
            let squatters = others.filter { answer in answer.instanceHost.map { short($0) != mine } ?? false }
            if !squatters.isEmpty {
                // Host names as people write them: no root dot.
                let bare = { (name: String?) -> String in name.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 } ?? "?" }
                let who = squatters.map { "\($0.source) (host \(bare($0.instanceHost)))" }.joined(separator: ", ")
                problems.append("another host answers for \(instance): \(who), while the peer is on \(bare(peerHost))")
                hints.append("two responders claim one instance name: stop the one that should not advertise it; nearby still tells them apart "
                    + "by the identity each proves")
            }
        }
        if let claims, let split = splitBrain(claims, ownAddresses: ownAddresses) {
            problems.append(split.problem)
            hints.append(split.hint)
        }
        guard problems.isEmpty else {
            return DoctorCheck("conflicts", .fail, problems.joined(separator: "; "), hint: hints.joined(separator: "; "))
        }
        guard let current else {
            return DoctorCheck("conflicts", .skip, "not judged: this host's probe did not come back, so its announced name is not known (see self-advertisement)")
        }
        let peerPart = instance == nil ? "" : "; no other host answers for \(instance ?? "")"
        let askedPart = claims.map { claims in
            claims.asked == 0 ? "; no neighbour to ask for \(claims.name) (this host's neighbour tables are empty)"
                : "; none of the \(claims.asked) neighbour\(claims.asked == 1 ? "" : "s") asked directly claims \(claims.name)"
        } ?? ""
        return DoctorCheck("conflicts", .ok, "this host's daemon announces itself as \(short(current)).local (configured: \(configured.map(short) ?? "?"), \(configuredFrom))\(peerPart)\(askedPart)")
    }

    /// A split brain among `claims`: neighbours that answer for this host's name with an address
    /// that is not this host's (a second stack on this host gives this host's own). nil: none.
    package static func splitBrain(_ claims: MDNSQuestion.Claims, ownAddresses: [String]) -> (problem: String, hint: String)? {
        let bare = { (address: String) in String(address.lowercased().split(separator: "%", maxSplits: 1).first ?? "") }
        let own = Set(ownAddresses.map(bare))
        let others = claims.claims.filter { claim in !own.contains(bare(claim.source)) && claim.addresses.contains { !own.contains(bare($0)) } }
        guard !others.isEmpty else { return nil }
        var name = claims.name
        while name.hasSuffix(".") { name.removeLast() }
        // IPv4 first: the address a person types.
        let ordered = { (claim: MDNSQuestion.Claim) in claim.addresses.filter { !$0.contains(":") } + claim.addresses.filter { $0.contains(":") } }
        let who = others.prefix(3).map { "\($0.source) (\(name) at \(ordered($0).prefix(3).joined(separator: ", ")))" }.joined(separator: ", ")
        let first = others[0].source
        return (
            "a split brain: another host claims this host's name \(name) — \(who) answers when asked directly (unicast to its UDP 5353). "
                + "Multicast between this host and \(first) is blocked, so neither daemon hears the other's claim and neither renames: "
                + "each host's neighbours resolve \(name) to whichever answer reaches them",
            "give one of the two hosts another name (host-name= in avahi-daemon.conf, or 'hostnamectl hostname NAME') and restart its avahi-daemon; "
                + "then look for what drops multicast between them (a firewall dropping UDP 5353 to 224.0.0.251 or ff02::fb, Wi-Fi client isolation, "
                + "IGMP snooping without a querier): 'nearby watch' on a third host names both claims")
    }
}
