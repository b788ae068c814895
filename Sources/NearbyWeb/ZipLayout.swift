import CZlib
import NearbyBase

/// A shared directory as one .zip, streamed as it is read: stored (not compressed — phones' photos
/// and videos are compressed already, and a stored entry costs no CPU), each entry's sizes known
/// up front so the whole length is too (`Content-Length`, a browser's progress bar), its CRC-32
/// (zlib's) in a data descriptor after its bytes, then the central directory. Pure: the bytes of
/// every header, for entries and CRCs given; `ZipLayoutTests` check it, `unzip -t` checks it in e2e.
/// No Zip64: a directory of 4 GiB or more, or of 65,535 entries or more, is not offered as one zip.
package struct ZipLayout: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var name: String
        package var size: UInt64
        /// Seconds since 1970 (shown in the zip as DOS local time, UTC here).
        package var modified: Double
        package var directory: Bool
        package init(name: String, size: UInt64, modified: Double, directory: Bool = false) {
            self.name = name
            self.size = directory ? 0 : size
            self.modified = modified
            self.directory = directory
        }
        var stored: String { directory && !name.hasSuffix("/") ? name + "/" : name }
        var nameBytes: [UInt8] { Array(stored.utf8) }
    }

    package let entries: [Entry]
    /// Where each entry's local header starts.
    package let offsets: [UInt64]
    package let centralDirectoryOffset: UInt64
    package let totalSize: UInt64

    static let limit: UInt64 = 0xFFFF_FFFF

    /// Nil when the entries need Zip64 (too large or too many) or a name is over 65,535 bytes.
    package init?(_ entries: [Entry]) {
        guard entries.count < 0xFFFF else { return nil }
        var offset: UInt64 = 0
        var offsets: [UInt64] = []
        var central: UInt64 = 0
        for entry in entries {
            guard entry.nameBytes.count < 0xFFFF, entry.size < Self.limit else { return nil }
            offsets.append(offset)
            offset += 30 + UInt64(entry.nameBytes.count) + entry.size + 16
            central += 46 + UInt64(entry.nameBytes.count)
        }
        guard offset + central + 22 < Self.limit else { return nil }
        self.entries = entries
        self.offsets = offsets
        centralDirectoryOffset = offset
        totalSize = offset + central + 22
    }

    /// Bit 3 (sizes and CRC in a data descriptor), bit 11 (names in UTF-8).
    static let flags: UInt16 = 0x0808

    package func localHeader(_ index: Int) -> [UInt8] {
        let entry = entries[index]
        var out = ZipBytes()
        out.u32(0x0403_4B50)
        out.u16(10) // version needed: 1.0, stored
        out.u16(Self.flags)
        out.u16(0) // stored
        out.dosTime(entry.modified)
        out.u32(0) // CRC in the descriptor
        out.u32(UInt32(entry.size))
        out.u32(UInt32(entry.size))
        out.u16(UInt16(entry.nameBytes.count))
        out.u16(0)
        out.bytes += entry.nameBytes
        return out.bytes
    }

    package func descriptor(_ index: Int, crc: UInt32) -> [UInt8] {
        var out = ZipBytes()
        out.u32(0x0807_4B50)
        out.u32(crc)
        out.u32(UInt32(entries[index].size))
        out.u32(UInt32(entries[index].size))
        return out.bytes
    }

    package func centralDirectory(crcs: [UInt32]) -> [UInt8] {
        var out = ZipBytes()
        for (index, entry) in entries.enumerated() {
            out.u32(0x0201_4B50)
            out.u16(0x031E) // made by: Unix, 3.0
            out.u16(10)
            out.u16(Self.flags)
            out.u16(0)
            out.dosTime(entry.modified)
            out.u32(crcs[index])
            out.u32(UInt32(entry.size))
            out.u32(UInt32(entry.size))
            out.u16(UInt16(entry.nameBytes.count))
            out.u16(0) // extra
            out.u16(0) // comment
            out.u16(0) // disk
            out.u16(0) // internal attributes
            out.u32((entry.directory ? 0o040755 : 0o100644) << 16 | (entry.directory ? 0x10 : 0))
            out.u32(UInt32(offsets[index]))
            out.bytes += entry.nameBytes
        }
        let size = UInt32(out.bytes.count)
        out.u32(0x0605_4B50)
        out.u16(0)
        out.u16(0)
        out.u16(UInt16(entries.count))
        out.u16(UInt16(entries.count))
        out.u32(size)
        out.u32(UInt32(centralDirectoryOffset))
        out.u16(0)
        return out.bytes
    }

    /// zlib's CRC-32 of `bytes`, continuing from `crc` (0 to begin).
    package static func crc32(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        var value = UInt(crc)
        var rest = bytes.count
        var pointer = base.assumingMemoryBound(to: UInt8.self)
        while rest > 0 {
            let step = min(rest, Int(UInt32.max >> 1))
            value = CZlib.crc32(value, pointer, UInt32(step))
            pointer += step
            rest -= step
        }
        return UInt32(truncatingIfNeeded: value)
    }
}

struct ZipBytes {
    var bytes: [UInt8] = []
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
    mutating func u32(_ value: UInt32) {
        bytes += [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }

    /// MS-DOS time and date (2-second steps, from 1980), from seconds since 1970 in UTC.
    mutating func dosTime(_ seconds: Double) {
        let total = max(315_532_800, Int(seconds.isFinite ? seconds : 0)) // 1980-01-01
        let days = total / 86400
        let secondsOfDay = total % 86400
        let (year, month, day) = CivilDate.civil(fromDays: Int64(days))
        let time = (secondsOfDay / 3600) << 11 | ((secondsOfDay % 3600) / 60) << 5 | (secondsOfDay % 60) / 2
        let date = Int(min(max(year - 1980, 0), 127)) << 9 | Int(month) << 5 | Int(day)
        u16(UInt16(time))
        u16(UInt16(date))
    }
}
