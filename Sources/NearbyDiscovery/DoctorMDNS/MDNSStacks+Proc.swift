import Foundation
import NearbyBase
#if canImport(Glibc)
import Glibc
#endif

/// Reading `/proc` for `mdns-stacks`: the sockets on 5353 of this network namespace and, where
/// this user may read `/proc/PID/fd`, the process that holds each.
extension MDNSStacks {
    /// At most this many processes are looked at, and this many descriptors of each.
    static let maxProcesses = 32_768
    static let maxDescriptors = 65_536

    /// Every socket on 5353 with its owner, or its likely owners when the owner cannot be read.
    package static func holders(proc: String = "/proc") -> [Holder] {
        let sockets = [(Family.ipv4, "net/udp"), (.ipv6, "net/udp6")].flatMap { family, file in
            parse(read("\(proc)/\(file)") ?? "", family: family)
        }.filter { $0.port == port }
        guard !sockets.isEmpty else { return [] }
        let wanted = Set(sockets.map(\.inode))
        var owners: [UInt64: Process] = [:]
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: proc)) ?? []).compactMap(Int.init).sorted().prefix(maxProcesses)
        for pid in pids where owners.count < wanted.count {
            guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "\(proc)/\(pid)/fd") else { continue }
            for descriptor in descriptors.prefix(maxDescriptors) {
                guard let target = link("\(proc)/\(pid)/fd/\(descriptor)"), target.hasPrefix("socket:["), target.hasSuffix("]"),
                      let inode = UInt64(target.dropFirst(8).dropLast()), wanted.contains(inode), owners[inode] == nil
                else { continue }
                owners[inode] = Process(pid: pid, command: command(proc: proc, pid: pid) ?? "?")
            }
        }
        // Sockets whose owner this user cannot read: the known responders running as the socket's
        // user whose network is this one (their /proc/PID/net/udp lists the same socket).
        let hidden = sockets.filter { owners[$0.inode] == nil }
        var candidates: [Int: [Process]] = [:]
        if !hidden.isEmpty {
            for pid in pids {
                guard let name = command(proc: proc, pid: pid), responders[name] != nil, let uid = self.uid(proc: proc, pid: pid) else { continue }
                let theirs = [(Family.ipv4, "net/udp"), (.ipv6, "net/udp6")].flatMap { family, file in
                    parse(read("\(proc)/\(pid)/\(file)") ?? "", family: family)
                }
                let here = Set(theirs.map(\.inode))
                for socket in hidden where socket.uid == uid && here.contains(socket.inode) {
                    candidates[Int(socket.inode), default: []].append(Process(pid: pid, command: name))
                }
            }
        }
        return sockets.map { socket in
            Holder(socket: socket, owner: owners[socket.inode], candidates: candidates[Int(socket.inode)] ?? [])
        }
    }

    /// A process's `comm`, or nil when it is gone.
    static func command(proc: String, pid: Int) -> String? {
        read("\(proc)/\(pid)/comm", limit: 64).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// A process's real uid (`Uid:` of /proc/PID/status).
    static func uid(proc: String, pid: Int) -> Int? {
        guard let status = read("\(proc)/\(pid)/status", limit: 16_384) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// A process's arguments (`/proc/PID/cmdline`, NUL-separated).
    package static func arguments(proc: String = "/proc", pid: Int) -> [String] {
        guard let text = read("\(proc)/\(pid)/cmdline", limit: 65_536) else { return [] }
        return text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
    }

    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A file of /proc, at most `limit` bytes (they report a size of 0, so read until the end).
    static func read(_ path: String, limit: Int = 8 << 20) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: limit) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The host name avahi-daemon is configured to announce: `host-name=` of the configuration file
/// it runs with (its `-f FILE`, else /etc/avahi/avahi-daemon.conf), else this host's name.
package enum AvahiHostName {
    package static let defaultConfig = "/etc/avahi/avahi-daemon.conf"

    /// (name, where it came from); nil name when nothing says.
    package static func configured(holders: [MDNSStacks.Holder], proc: String = "/proc") -> (name: String?, from: String) {
        let daemon = holders.compactMap { holder in
            holder.owner?.command == "avahi-daemon" ? holder.owner : holder.candidates.first { $0.command == "avahi-daemon" }
        }.first
        let path = daemon.flatMap { configFile(MDNSStacks.arguments(proc: proc, pid: $0.pid)) } ?? defaultConfig
        if let text = MDNSStacks.read(path, limit: 1 << 20), let name = hostName(inConfig: text) {
            return (name, "host-name=\(name) in \(path)")
        }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return (nil, "no host-name= in \(path)") }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (host.split(separator: ".").first.map(String.init) ?? host, "this host's name (no host-name= in \(path))")
    }

    /// The `-f FILE` / `--file=FILE` of avahi-daemon's arguments.
    package static func configFile(_ arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "-f" || argument == "--file", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--file=") { return String(argument.dropFirst(7)) }
        }
        return nil
    }

    /// `host-name=` of an avahi-daemon.conf (not commented out).
    package static func hostName(inConfig text: String) -> String? {
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix(";"), let eq = trimmed.firstIndex(of: "=") else { continue }
            guard trimmed[..<eq].trimmingCharacters(in: .whitespaces) == "host-name" else { continue }
            let value = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { return value }
        }
        return nil
    }
}
