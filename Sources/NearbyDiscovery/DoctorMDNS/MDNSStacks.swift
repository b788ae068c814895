import Foundation
import NearbyBase
#if canImport(Glibc)
import Glibc
#endif

/// `doctor`'s `mdns-stacks` check: the processes of this host (its network namespace) that hold a
/// UDP socket on port 5353, found as `ss -lupn` finds them — the sockets in `/proc/net/udp` and
/// `/proc/net/udp6`, their owners by the `socket:[inode]` links in `/proc/PID/fd`. More than one
/// responder per IP family splits the link's mDNS between them (unicast datagrams go to one
/// socket only), and avahi only logs "Detected another IPv4 mDNS stack".
package enum MDNSStacks {
    package static let port = 5353
    /// At most this many lines of one `/proc/net/udp*` file are read (the file comes from the
    /// kernel, but a host with a socket per connection can list many).
    package static let maxLines = 65_536

    package enum Family: String, Sendable, Equatable { case ipv4 = "IPv4", ipv6 = "IPv6" }

    /// One line of `/proc/net/udp`: a bound UDP socket.
    package struct Socket: Sendable, Equatable {
        package var family: Family
        package var localAddress: String
        package var port: Int
        package var uid: Int
        package var inode: UInt64

        package init(family: Family, localAddress: String, port: Int, uid: Int, inode: UInt64) {
            self.family = family
            self.localAddress = localAddress
            self.port = port
            self.uid = uid
            self.inode = inode
        }
    }

    /// A process: its pid and `/proc/PID/comm`.
    package struct Process: Sendable, Equatable, Hashable {
        package var pid: Int
        package var command: String

        package init(pid: Int, command: String) {
            self.pid = pid
            self.command = command
        }

        package var described: String { "\(command) pid \(pid)" }
    }

    /// A socket on 5353 with its owner when this user may read it; else the known responders that
    /// run as the socket's user in this network namespace (`candidates`), which may own it.
    package struct Holder: Sendable, Equatable {
        package var socket: Socket
        package var owner: Process?
        package var candidates: [Process]

        package init(socket: Socket, owner: Process?, candidates: [Process] = []) {
            self.socket = socket
            self.owner = owner
            self.candidates = candidates
        }
    }

    /// The sockets of a `/proc/net/udp` or `/proc/net/udp6` text. Lines that do not parse are
    /// skipped (the header among them); at most `maxLines` are read.
    package static func parse(_ text: String, family: Family) -> [Socket] {
        var sockets: [Socket] = []
        for line in text.split(whereSeparator: \.isNewline).prefix(maxLines) {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 10, fields[0].hasSuffix(":") else { continue }
            let local = fields[1].split(separator: ":")
            guard local.count == 2, let port = Int(local[1], radix: 16), let uid = Int(fields[7]), let inode = UInt64(fields[9]),
                  let address = address(hex: String(local[0]), family: family)
            else { continue }
            sockets.append(Socket(family: family, localAddress: address, port: port, uid: uid, inode: inode))
        }
        return sockets
    }

    /// `0100007F` → `127.0.0.1`: the kernel prints each 32-bit word in host byte order (little
    /// endian on every machine this runs on).
    package static func address(hex: String, family: Family) -> String? {
        let expected = family == .ipv4 ? 8 : 32
        guard hex.count == expected, hex.allSatisfy(\.isHexDigit) else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 8)
            guard let word = UInt32(hex[index..<next], radix: 16) else { return nil }
            let little = word.littleEndian
            bytes += [UInt8(little & 0xFF), UInt8(little >> 8 & 0xFF), UInt8(little >> 16 & 0xFF), UInt8(little >> 24)]
            index = next
        }
        if family == .ipv4 { return bytes.map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return compressed(groups)
    }

    /// `0:0:0:0:0:0:0:0` → `::` (the longest run of zero groups).
    static func compressed(_ groups: [String]) -> String {
        var best = (start: -1, length: 0)
        var run = (start: -1, length: 0)
        for (index, group) in groups.enumerated() {
            if group == "0" {
                run = run.start < 0 ? (index, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        guard best.length > 1 else { return groups.joined(separator: ":") }
        let head = groups[..<best.start].joined(separator: ":")
        let tail = groups[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }

    /// Commands known to answer mDNS, with how to turn each off (a `comm`, at most 15 bytes).
    package static let responders: [String: String] = [
        "avahi-daemon": "a second avahi-daemon (another instance, or one in a container with host networking): stop the one you do not need",
        "systemd-resolve": "systemd-resolved answers mDNS: set MulticastDNS=no in /etc/systemd/resolved.conf (and 'resolvectl mdns IFACE no'), then 'sudo systemctl restart systemd-resolved'",
        "mdnsd": "mdnsd (another mDNS responder): stop it, or stop avahi-daemon and use only one",
        "mDNSResponder": "mDNSResponder (Apple's responder): stop it, or stop avahi-daemon and use only one",
        "kdeconnectd": "KDE Connect answers mDNS itself: quit it (or turn off its discovery) while you debug, or keep only one of them",
        "chrome": "the browser's own mDNS (Chrome/Chromium): quit it, or turn its mDNS off in chrome://flags",
        "chromium": "the browser's own mDNS (Chrome/Chromium): quit it, or turn its mDNS off in chrome://flags",
        "spotify": "Spotify's own mDNS (Connect): quit it while you debug",
    ]

    /// The `mdns-stacks` check from the sockets on 5353 and their owners. `asRoot`: every owner
    /// was readable (an unknown owner is then a process that ended meanwhile).
    package static func check(_ holders: [Holder], asRoot: Bool) -> DoctorCheck {
        let on5353 = holders.filter { $0.socket.port == port }
        guard !on5353.isEmpty else {
            return DoctorCheck("mdns-stacks", .warn, "no process holds UDP port 5353 in this host's network: no mDNS responder answers here",
                               hint: "avahi-daemon is not listening on mDNS here: is it running in this network namespace (not in a container)? 'sudo ss -lupn sport = :5353'")
        }
        var lines: [String] = []
        var crowded: [Family] = []
        var others: [Process] = []
        var unknown = false
        for family in [Family.ipv4, .ipv6] {
            let ofFamily = on5353.filter { $0.socket.family == family }
            guard !ofFamily.isEmpty else { continue }
            // One responder per process: a process may bind one socket per address.
            var known: [Process] = []
            var strangers: [Holder] = []
            for holder in ofFamily {
                if let owner = holder.owner {
                    if !known.contains(owner) { known.append(owner) }
                } else {
                    strangers.append(holder)
                }
            }
            // avahi-daemon first (the one nearby uses), the others as they started.
            known.sort { ($0.command != "avahi-daemon" ? 1 : 0, $0.pid) < ($1.command != "avahi-daemon" ? 1 : 0, $1.pid) }
            let count = known.count + strangers.count
            var words = known.map(\.described)
            if !strangers.isEmpty {
                unknown = true
                let uids = Set(strangers.map(\.socket.uid)).sorted().map(user).joined(separator: ", ")
                let candidates = Set(strangers.flatMap(\.candidates)).subtracting(known).sorted { $0.pid < $1.pid }
                let likely = candidates.isEmpty ? "" : "; responders of that user in this network: \(candidates.map(\.described).joined(separator: ", "))"
                let noun = strangers.count == 1 ? "1 socket" : "\(strangers.count) sockets"
                words.append("\(noun) of \(uids) whose process this user cannot see\(likely)")
                others += candidates
            }
            lines.append("\(family.rawValue): \(words.joined(separator: " and "))")
            if count > 1 { crowded.append(family) }
            others += known
        }
        let detail = "UDP port 5353 — " + lines.joined(separator: "; ")
        guard !crowded.isEmpty else {
            return DoctorCheck("mdns-stacks", .ok, detail + (unknown && !asRoot ? " (owners this user cannot read: run as root to name them)" : ""))
        }
        let families = crowded.map(\.rawValue).joined(separator: " and ")
        let extra = Set(others.filter { $0.command != "avahi-daemon" }.map(\.command)).sorted()
        var hints = extra.compactMap { responders[$0] }
        let unnamed = extra.filter { responders[$0] == nil }
        if !unnamed.isEmpty {
            hints.append("\(unnamed.joined(separator: ", ")) binds 5353 beside avahi-daemon: stop it, or configure it to use avahi (its D-Bus API) rather than its own mDNS socket")
        }
        if hints.isEmpty { hints.append("keep one mDNS responder per host: systemd-resolved (MulticastDNS=no in /etc/systemd/resolved.conf), KDE Connect, a browser or a container with host networking may be the other") }
        if unknown && !asRoot { hints.append("'sudo ss -lupn sport = :5353' (or this doctor with sudo) names every process") }
        return DoctorCheck(
            "mdns-stacks", .fail,
            "more than one mDNS responder on this host (\(families)): \(detail); unicast answers and queries reach only one of them, so each misses part of the link's mDNS",
            hint: hints.joined(separator: "; "))
    }

    static func user(_ uid: Int) -> String {
        guard let entry = getpwuid(uid_t(uid)), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }
}
