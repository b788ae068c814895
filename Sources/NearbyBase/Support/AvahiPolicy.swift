import Foundation

/// Where avahi-daemon's D-Bus policy is: a refusal names the file a person can open. Debian 12 and
/// later (dbus ≥ 1.14's layout) install it under /usr/share/dbus-1/system.d; older systems under
/// /etc/dbus-1/system.d (where a local copy also overrides the packaged one). Looked for at run
/// time, not assumed.
package enum AvahiPolicy {
    package static let candidates = [
        "/usr/share/dbus-1/system.d/avahi-dbus.conf",
        "/etc/dbus-1/system.d/avahi-dbus.conf",
    ]

    /// The policy files that exist, in words: "A", "A and B" when both do, or "A or B" when
    /// neither does (the person looks in both).
    package static func files(exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String {
        let present = candidates.filter(exists)
        if present.isEmpty { return candidates.joined(separator: " or ") }
        return present.joined(separator: " and ")
    }
}
