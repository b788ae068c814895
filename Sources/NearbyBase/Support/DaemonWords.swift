import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sentences for a DNS-SD daemon that cannot be used, in words and with the command that starts
/// it on this system — never the library's status number. D-Bus missing (no system bus to connect
/// to) is told apart from avahi-daemon missing: each needs its own start command.
package enum DaemonWords {
    /// The sentence for a daemon that could not be reached (`kDNSServiceErr_Unknown` and kin).
    package static func unreachable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let bus = systemBus(environment), !accepts(bus) {
            return "D-Bus is not running (no system bus at \(bus)), and avahi-daemon needs it: start D-Bus with `\(start("dbus"))`, "
                + "then avahi-daemon with `\(start("avahi-daemon"))`"
        }
        return "avahi-daemon is not running: start it with `\(start("avahi-daemon"))`"
    }

    /// How to start `service` (`avahi-daemon`, `dbus`) here: systemd's way where systemd runs, the
    /// init script's where `service` and the script exist, else the daemon itself.
    package static func start(_ service: String, exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String {
        if exists("/run/systemd/system") { return "sudo systemctl start \(service)" }
        if ["/usr/sbin/service", "/sbin/service"].contains(where: exists), exists("/etc/init.d/\(service)") {
            return "sudo service \(service) start"
        }
        return service == "dbus" ? "sudo dbus-daemon --system --fork" : "sudo avahi-daemon --daemonize"
    }

    /// The system bus's socket path: `DBUS_SYSTEM_BUS_ADDRESS`'s `unix:path=`, else the standard one;
    /// nil for an address this cannot check (abstract sockets, TCP).
    static func systemBus(_ environment: [String: String]) -> String? {
        guard let address = environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty else { return "/run/dbus/system_bus_socket" }
        for part in address.split(separator: ";") {
            for field in part.drop(while: { $0 != ":" }).dropFirst().split(separator: ",") where field.hasPrefix("path=") {
                return String(field.dropFirst("path=".count))
            }
        }
        return nil
    }

    /// Whether something listens on the Unix socket at `path`.
    static func accepts(_ path: String) -> Bool {
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return true }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0
    }

    /// A DNS-SD status other than "unreachable", in words (dns_sd.h's kDNSServiceErr_* names).
    package static func status(_ code: Int32) -> String {
        switch code {
        case -65538: "no such name"
        case -65539: "the daemon ran out of memory"
        case -65540: "a parameter the daemon does not take"
        case -65541, -65542: "the daemon lost track of the request"
        case -65543: "flags the daemon does not take"
        case -65544: "something the daemon does not support"
        case -65545: "the daemon is not ready"
        case -65547: "already registered"
        case -65548: "the name is taken"
        case -65549: "the daemon calls the request invalid"
        case -65551: "the daemon speaks another version"
        case -65552: "no such network interface"
        case -65553: "the daemon refused this user"
        case -65554: "no such record"
        case -65555, -65556: "the daemon refused the key"
        case -65559: "the clock is off"
        case -65568: "the daemon did not answer in time"
        case -65569, -65563: "the daemon went away"
        default: "the daemon gave no reason"
        }
    }
}
