import Foundation
import NearbyBase

/// Tells "avahi-daemon is not running" from "it runs, but D-Bus refuses us": Avahi's compat layer
/// says -65537 for both when the policy denies every call to the daemon (a site policy that lets
/// only some users browse). The bus itself is asked, with `dbus-send`, whether the daemon's name
/// has an owner; any doubt (no dbus-send, no bus, no answer in a second) keeps the old sentence.
enum DaemonAccess {
    /// The error for a daemon that could not be used: `accessRefused` when avahi-daemon is on the
    /// bus, else the status as it was.
    static func unavailable(_ status: Int32) -> NearbyError {
        guard status != NearbyError.accessRefused, avahiIsOnTheBus() == true else { return .daemonUnavailable(code: status) }
        return .daemonUnavailable(code: NearbyError.accessRefused)
    }

    /// Whether `org.freedesktop.Avahi` has an owner on the system bus; nil when that cannot be told.
    static func avahiIsOnTheBus() -> Bool? {
        let candidates = ["/usr/bin/dbus-send", "/bin/dbus-send"]
        guard let tool = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = [
            "--system", "--print-reply", "--reply-timeout=1000", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.Avahi",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = (try? output.fileHandleForReading.read(upToCount: 4096)) ?? Data()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        let reply = String(decoding: data, as: UTF8.self)
        return reply.contains("boolean true") ? true : reply.contains("boolean false") ? false : nil
    }
}
