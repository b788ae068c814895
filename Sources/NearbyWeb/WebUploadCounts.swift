import NearbyBase

/// The files each browser's address has left in the save directory (finished, or being received
/// now), counted for as long as the drop box serves: at most `perAddress` each, so one stranger
/// cannot fill the file system's inodes with empty files (issue 51). The table is capped too: at
/// most `addresses` addresses, and a new one beyond that is refused as an address over its cap is.
package final class WebUploadCounts: Sendable {
    package let perAddress: Int
    package let addresses: Int
    private let counts = Locked<[String: Int]>([:])

    package init(perAddress: Int = 1000, addresses: Int = 4096) {
        self.perAddress = max(0, perAddress)
        self.addresses = max(1, addresses)
    }

    /// The defaults, with `NEARBY_WEB_FILES_PER_ADDRESS` in place of `perAddress`.
    package static func from(environment: [String: String]) -> WebUploadCounts {
        WebUploadCounts(perAddress: environment["NEARBY_WEB_FILES_PER_ADDRESS"].flatMap(Int.init) ?? 1000)
    }

    /// Counts one more file from `address`; false (nothing counted) when it is at its cap, or is
    /// new and the table is full.
    func reserve(_ address: String) -> Bool {
        counts.withLock { table in
            let now = table[address] ?? 0
            guard now < perAddress, now > 0 || table.count < addresses else { return false }
            table[address] = now + 1
            return true
        }
    }

    /// A counted file did not land: it no longer counts.
    func release(_ address: String) {
        counts.withLock { table in
            guard let now = table[address] else { return }
            table[address] = now > 1 ? now - 1 : nil
        }
    }

    /// The files counted for `address`.
    func count(_ address: String) -> Int { counts.withLock { $0[address] ?? 0 } }
}
