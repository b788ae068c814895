import Foundation

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One finding of `nearby doctor`: what was checked, how it went, and what a person can do about it.
package struct DoctorCheck: Sendable, Equatable {
    /// `skip`: not judged, because another check already explained what it would find (the detail
    /// says which); it counts as neither a warning nor a failure.
    package enum Status: String, Sendable, Codable { case ok, warn, fail, skip }

    package var name: String
    package var status: Status
    package var detail: String
    package var hint: String?
    /// The exit status a `fail` stands for (docs/exit-codes.md).
    package var exitStatus: ExitStatus

    package init(_ name: String, _ status: Status, _ detail: String, hint: String? = nil, exitStatus: ExitStatus = .failure) {
        self.name = name
        self.status = status
        self.detail = detail
        self.hint = hint
        self.exitStatus = status == .fail ? exitStatus : .success
    }

    /// The status of the run: 0 when nothing failed, else the first failure's.
    package static func exitStatus(of checks: [DoctorCheck]) -> ExitStatus {
        checks.first { $0.status == .fail }?.exitStatus ?? .success
    }

    package static var daemonHint: String {
        "start it: '\(DaemonWords.start("avahi-daemon"))'; it needs D-Bus: '\(DaemonWords.start("dbus"))'"
    }
    /// The daemon check when this host's DNS-SD daemon cannot be used: the error's one sentence
    /// (not running, or access refused), with the hint for that cause and the error's exit status.
    package static func daemonFailed(_ error: NearbyError) -> DoctorCheck {
        let refused = error == .daemonUnavailable(code: NearbyError.accessRefused)
        return DoctorCheck(
            "daemon", .fail, error.errorDescription ?? "\(error)",
            hint: refused ? accessHint : daemonHint, exitStatus: error.exitStatus)
    }

    /// The daemon check when the daemon took the connection but answered nothing in `waited`:
    /// running, but hung (or its bus is).
    package static func daemonSilent(after waited: Duration) -> DoctorCheck {
        let seconds = Double(waited / .milliseconds(100)).rounded() / 10
        return DoctorCheck(
            "daemon", .fail, "avahi-daemon did not answer a DNS-SD request in \(seconds) s: it runs but hangs, or D-Bus does",
            hint: "restart it: 'sudo systemctl restart avahi-daemon'; see 'journalctl -u avahi-daemon' and 'systemctl status dbus'",
            exitStatus: .daemonUnavailable)
    }

    package static var accessHint: String {
        "avahi-daemon runs but refuses this user: see the <policy> entries of \(AvahiPolicy.files())"
    }
    package static let multicastHint =
        "multicast looks blocked or you are alone on this link: a firewall dropping UDP 5353, Wi-Fi client isolation, or IGMP snooping"

    /// The hint of a multicast check that failed: the local rule the firewall check found when
    /// there is one (that is what to fix first), else `otherwise`.
    package static func multicastHint(firewall rules: [String], otherwise: String) -> String {
        guard let rule = rules.first else { return otherwise }
        let more = rules.count > 1 ? " (and \(rules.count - 1) more, see the firewall check)" : " (see the firewall check)"
        return "this host's firewall drops mDNS: '\(rule)'\(more); remove that rule or let UDP 5353 in and out "
            + "('nft -a list ruleset' shows its handle, 'nft delete rule FAMILY TABLE CHAIN handle N' removes it)"
    }
}

/// A network interface as `getifaddrs` shows it.
package struct NetworkInterface: Sendable, Equatable {
    package var name: String
    package var up: Bool
    package var multicast: Bool
    package var loopback: Bool
    package var addresses: [String]
    /// Each address with its prefix length, `10.99.0.2/24` (the subnets this host is on).
    package var networks: [String]

    package init(name: String, up: Bool, multicast: Bool, loopback: Bool, addresses: [String], networks: [String] = []) {
        self.name = name
        self.up = up
        self.multicast = multicast
        self.loopback = loopback
        self.addresses = addresses
        self.networks = networks
    }

    /// Every interface with its IPv4 and IPv6 addresses, in the system's order.
    package static func list() -> [NetworkInterface] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var order: [String] = []
        var byName: [String: NetworkInterface] = [:]
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let name = String(cString: entry.pointee.ifa_name)
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            if byName[name] == nil {
                order.append(name)
                byName[name] = NetworkInterface(
                    name: name, up: flags & Int32(IFF_UP) != 0 && flags & Int32(IFF_RUNNING) != 0,
                    multicast: flags & Int32(IFF_MULTICAST) != 0, loopback: flags & Int32(IFF_LOOPBACK) != 0, addresses: [])
            }
            if let address = entry.pointee.ifa_addr, let text = Self.text(address) {
                byName[name]?.addresses.append(text)
                if let mask = entry.pointee.ifa_netmask, let bits = Self.prefixLength(mask) { byName[name]?.networks.append("\(text)/\(bits)") }
            }
        }
        return order.compactMap { byName[$0] }
    }

    /// The number of leading one bits of a netmask.
    private static func prefixLength(_ mask: UnsafeMutablePointer<sockaddr>) -> Int? {
        switch Int32(mask.pointee.sa_family) {
        case AF_INET:
            return UnsafeRawPointer(mask).load(as: sockaddr_in.self).sin_addr.s_addr.nonzeroBitCount
        case AF_INET6:
            var bits = UnsafeRawPointer(mask).load(as: sockaddr_in6.self).sin6_addr
            return withUnsafeBytes(of: &bits) { $0.reduce(0) { $0 + $1.nonzeroBitCount } }
        default:
            return nil
        }
    }

    private static func text(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var v4 = UnsafeRawPointer(address).load(as: sockaddr_in.self).sin_addr
            guard inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case AF_INET6:
            var v6 = UnsafeRawPointer(address).load(as: sockaddr_in6.self).sin6_addr
            guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The interfaces check: multicast DNS needs an interface that is up, not loopback, with multicast.
    package static func check(_ interfaces: [NetworkInterface], daemonConfig: String?) -> DoctorCheck {
        let usable = interfaces.filter { $0.up && $0.multicast && !$0.loopback && !$0.addresses.isEmpty }
        var detail = interfaces.filter { !$0.loopback }.map { interface in
            let state = [interface.up ? "up" : "down", interface.multicast ? "multicast" : "no multicast"].joined(separator: ", ")
            return "\(interface.name) (\(state)): \(interface.addresses.isEmpty ? "no address" : interface.addresses.joined(separator: " "))"
        }.joined(separator: "; ")
        let restrictions = daemonConfig.map(Self.interfaceRestrictions) ?? []
        if !restrictions.isEmpty { detail += "; avahi-daemon.conf: " + restrictions.joined(separator: ", ") }
        if usable.isEmpty {
            return DoctorCheck(
                "interfaces", .fail, detail.isEmpty ? "no network interface but loopback" : detail,
                hint: "bring an interface up with multicast: 'ip link set IFACE up multicast on'", exitStatus: .failure)
        }
        if !restrictions.isEmpty {
            return DoctorCheck("interfaces", .warn, detail, hint: "avahi-daemon only uses the interfaces its configuration allows; check /etc/avahi/avahi-daemon.conf")
        }
        return DoctorCheck("interfaces", .ok, detail)
    }

    /// `allow-interfaces=` and `deny-interfaces=` lines of an avahi-daemon.conf that are set.
    package static func interfaceRestrictions(_ config: String) -> [String] {
        config.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), let eq = trimmed.firstIndex(of: "=") else { return nil }
            let key = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            let value = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            guard key == "allow-interfaces" || key == "deny-interfaces", !value.isEmpty else { return nil }
            return "\(key)=\(value)"
        }
    }
}

extension Events {
    /// `doctor`: one check's outcome.
    package struct Check: EventBody {
        package static let event = "check"
        package var check: String
        package var status: DoctorCheck.Status
        package var detail: String
        @Null package var hint: String?

        enum CodingKeys: String, CodingKey { case check, status, detail, hint }

        package init(_ result: DoctorCheck) {
            check = result.name
            status = result.status
            detail = result.detail
            hint = result.hint
        }

    }

    /// `doctor`'s last line: how many checks passed, warned and failed, and the exit status.
    package struct Summary: EventBody {
        package static let event = "summary"
        package var ok: Int
        package var warn: Int
        package var fail: Int
        package var exitStatus: Int32

        enum CodingKeys: String, CodingKey {
            case ok, warn, fail
            case exitStatus = "exit_status"
        }

        package init(_ checks: [DoctorCheck]) {
            ok = checks.filter { $0.status == .ok }.count
            warn = checks.filter { $0.status == .warn }.count
            fail = checks.filter { $0.status == .fail }.count
            exitStatus = DoctorCheck.exitStatus(of: checks).rawValue
        }
    }
}

/// Local firewall rules that would drop mDNS, read from `nft list ruleset` where that is allowed.
package enum FirewallRules {
    /// The firewall check: rules that mention port 5353 and drop or reject. `ruleset` is nil when
    /// it could not be read (only root may list the rules, or nft is missing): that is said, with
    /// how to have them read, not guessed at.
    package static func check(ruleset: String?, asRoot: Bool = geteuid() == 0) -> DoctorCheck {
        guard let ruleset else {
            guard asRoot else {
                return DoctorCheck("firewall", .ok, "local firewall rules are readable only by root: not checked "
                    + "(the same doctor command with sudo reads them and names a rule that drops mDNS)")
            }
            return DoctorCheck("firewall", .ok, "local firewall rules not readable here (nft missing): not checked")
        }
        let suspicious = dropping(ruleset)
        guard suspicious.isEmpty else {
            return DoctorCheck(
                "firewall", .warn, "local rules that may drop mDNS: " + suspicious.prefix(5).joined(separator: "; "),
                hint: "mDNS needs UDP 5353 in and out: check 'nft list ruleset' (or 'iptables -L -n')")
        }
        return DoctorCheck("firewall", .ok, "no local nft rule drops UDP 5353")
    }

    /// The rules of `ruleset` that mention port 5353 and drop or reject, as written there.
    package static func dropping(_ ruleset: String) -> [String] {
        ruleset.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.contains("5353") && ($0.contains("drop") || $0.contains("reject")) }
    }

    /// `nft list ruleset`'s output, or nil when it cannot be run or read. At most 1 MiB is read.
    package static func read() -> String? {
        let candidates = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"]
        guard let nft = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nft)
        process.arguments = ["list", "ruleset"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = (try? output.fileHandleForReading.read(upToCount: 1 << 20)) ?? Data()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
