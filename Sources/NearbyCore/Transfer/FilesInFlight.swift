/// How many files of one `send-file` go at once on one session, as a pure value: small files travel
/// many at a time, each on a channel of its own, so that a 4 KiB file costs its bytes and not a
/// round trip (its offer, then its confirmation) of its own; a big file goes alone, as it always
/// did. A file may start while fewer than `files` are in flight and their bytes, with its own, stay
/// within `bytes` — or whenever nothing is in flight, whatever its size.
package struct FilesInFlight: Sendable, Equatable {
    package struct Limits: Sendable, Equatable {
        /// Files in flight at once: as many as a receiver keeps open for a peer it does not know
        /// (`ResourceBudget.Limits.strangerFilesPerLink`, 16: a file holds a descriptor there from
        /// its start until it is in place), a quarter of the session's channels.
        package var files: Int
        /// Bytes of the files in flight together: one channel's window, so that a folder of big
        /// files never has the receiver hold more than one big file does.
        package var bytes: UInt64

        package init(files: Int = 16, bytes: UInt64 = UInt64(ChannelMux.defaultWindow)) {
            self.files = max(1, files)
            self.bytes = bytes
        }
    }

    package let limits: Limits
    package private(set) var files = 0
    package private(set) var bytes: UInt64 = 0

    package init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether a file of `size` bytes may start now.
    package func admits(_ size: UInt64) -> Bool {
        files == 0 || (files < limits.files && bytes + size <= limits.bytes)
    }

    /// A file of `size` bytes started.
    package mutating func started(_ size: UInt64) {
        files += 1
        bytes += size
    }

    /// A file of `size` bytes ended (sent, refused or failed).
    package mutating func ended(_ size: UInt64) {
        files = max(0, files - 1)
        bytes -= min(bytes, size)
    }
}
