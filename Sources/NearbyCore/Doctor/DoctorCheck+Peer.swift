import Foundation
import NearbyIdentity
import NearbyDiscovery
import NearbyBase
import NearbyWire

/// The words of `nearby doctor PEER`'s last two checks, from what one connection to the peer
/// showed (`Connections.examine`): kept apart from the I/O so every case is tested.
extension DoctorCheck {
    /// `identity`: the handshake proved the advertised ID's key, or why not. nil when no handshake ran.
    /// `advertised`: false for a peer named by `HOST:PORT` (there is no advertised ID to compare).
    package static func identity(_ outcome: PeerExamination.Identity, peer name: String, advertised: Bool = true) -> DoctorCheck? {
        switch outcome {
        case .notRun:
            return nil
        case .unfinished:
            return DoctorCheck(
                "identity", .warn, "the handshake with \(name) had not ended when doctor's --timeout ran out: not checked",
                hint: "run doctor again with a longer --timeout")
        case let .proved(peer, pin):
            let pinned = pin == .known
                ? "the key matches its pin in known_peers"
                : "not in known_peers yet (a peer is pinned when it reaches a session)"
            let proved = advertised ? "the key of the ID it advertises" : "the key of its ID (named by address: no advertised ID to compare)"
            return DoctorCheck("identity", .ok, "\(peer.name) (\(peer.id)) proved \(proved); \(pinned); verification code \(peer.verificationCode)")
        case let .keyChanged(peer, knownPeers):
            return DoctorCheck(
                "identity", .fail,
                "pinned key changed: \(knownPeers) holds another key for \(peer) than the one \(name) presented; someone may be impersonating it, or it has a new identity",
                hint: "compare '\(Spelling.command(.identity))' on \(name)'s host; only if it really has a new identity (reinstalled, a new NEARBY_HOME), "
                    + "remove its pin: sed -i '/^\(peer) /d' \(knownPeers)",
                exitStatus: .identityCheckFailed)
        case let .failed(why, status):
            let hint = switch status {
            case .identityCheckFailed:
                "another node answers at this address, or something impersonates \(name): compare '\(Spelling.command(.identity))' on \(name)'s host with the ID it advertises"
            case .ioError:
                "fix or move the file named above: nearby refuses connections while known_peers cannot be read"
            default:
                "look at \(name)'s node for a 'rejected' event saying why (its known_peers may pin another key for this host's ID)"
            }
            return DoctorCheck("identity", .fail, "the handshake with \(name) failed: \(why)", hint: hint, exitStatus: status)
        }
    }

    /// `peer-sees-us`: whether the peer sees this host's `_nearby-doctor._tcp` probe. nil when it
    /// was not asked because no handshake ran. `address` is the peer's `HOST:PORT` that answered.
    /// `explained`: what another check already found that keeps the peer from seeing this host
    /// (another subnet): a peer that does not see it is then `skip`, not a one-way multicast `fail`.
    package static func peerSeesUs(
        _ visibility: PeerExamination.Visibility, peer name: String, instance: String?, address: String, explained: String? = nil
    ) -> DoctorCheck? {
        let probe = "\(instance ?? "?") (\(DoctorProbe.registrationType))"
        let lookThere = "on \(name)'s host, 'avahi-browse -rt \(DoctorProbe.registrationType)' while doctor runs here should list \(instance ?? "the probe")"
        switch visibility {
        case .notAsked:
            return nil
        case .noProbe:
            return DoctorCheck("peer-sees-us", .warn, "not asked whether \(name) sees this host: this host's probe is not published",
                               hint: "fix the self-advertisement check first")
        case .unsupported:
            return DoctorCheck("peer-sees-us", .warn, "\(name)'s node is older and cannot be asked whether it sees this host",
                               hint: "update nearby on \(name)'s host; meanwhile, \(lookThere)")
        case let .noAnswer(why):
            // A peer that does not see the probe says so only after its probe wait (3 s unless set).
            return DoctorCheck(
                "peer-sees-us", .warn, "\(name) did not say whether it sees this host: \(why)",
                hint: "\(lookThere); a node takes up to 3 s to say it does not see this host: a longer --timeout gives it that time")
        case let .answered(reply):
            if reply.seen {
                let at = reply.addresses.isEmpty ? "" : " at \(reply.addresses.joined(separator: " "))"
                return DoctorCheck("peer-sees-us", .ok, "\(name) sees this host's announcements: it found \(probe)\(at) in \(reply.waited) ms")
            }
            if reply.reason == DoctorProbe.daemonDown {
                // The peer speaks of its own daemon ("this host's" from where it stands).
                return DoctorCheck(
                    "peer-sees-us", .fail, "\(name) answers at \(address) but is not advertised: its DNS-SD daemon does not answer",
                    hint: "on \(name)'s host: start avahi-daemon ('sudo systemctl start avahi-daemon', or 'avahi-daemon -D'), "
                        + "then '\(Spelling.command(.doctor))' there; meanwhile this host reaches it by address: '\(Spelling.command(.invite, address))'",
                    exitStatus: .failure)
            }
            if let reason = reply.reason {
                return DoctorCheck("peer-sees-us", .warn, "\(name) could not look for this host: \(reason)",
                                   hint: "run doctor again in a moment; '\(Spelling.command(.doctor))' on \(name)'s host checks its daemon")
            }
            if let explained {
                return DoctorCheck("peer-sees-us", .skip, "\(name) does not see this host's announcements, as expected: \(explained)")
            }
            return DoctorCheck(
                "peer-sees-us", .fail,
                "\(name) does not see this host: one-way multicast (\(name)'s host drops mDNS from here: firewall on UDP 5353, "
                    + "client isolation, IGMP snooping); it looked for \(probe) for \(reply.waited) ms",
                hint: "on \(name)'s host, look for rules dropping UDP 5353 from this host ('nft list ruleset', 'iptables -L -n'); "
                    + "on Wi-Fi, turn off client (AP) isolation; on a managed switch, check IGMP snooping; \(lookThere). "
                    + "Meanwhile this host reaches \(name) by address, no multicast needed: '\(Spelling.command(.invite, address))'",
                exitStatus: .failure)
        }
    }
}
