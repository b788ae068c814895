import Foundation
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's dates as LocalSend carries them: `metadata: {"modified": …, "accessed": …}`, each an
/// RFC 3339 timestamp with its offset (the official app's core formats them with nanoseconds and
/// `Z`, its Dart side with microseconds; a timestamp without an offset is ignored there, and here).
/// Sent from the file's own times; applied on receipt once the file is whole and placed. A date
/// that does not read is ignored, never an error.
package struct LocalSendFileDates: Sendable, Equatable, Codable {
    package var modified: String?
    package var accessed: String?

    package init(modified: String? = nil, accessed: String? = nil) {
        self.modified = modified
        self.accessed = accessed
    }

    /// Nil when it carries neither date (the official app then sends no `metadata`).
    var orNil: LocalSendFileDates? { modified == nil && accessed == nil ? nil : self }

    /// A time as seconds and nanoseconds since 1970 (negative seconds before it).
    package struct Instant: Sendable, Equatable {
        package var seconds: Int64
        package var nanoseconds: Int32
        package init(seconds: Int64, nanoseconds: Int32) {
            self.seconds = seconds
            self.nanoseconds = nanoseconds
        }
    }

    /// The dates of an open file, read with `fstat` before anything reads it.
    static func of(_ status: stat) -> LocalSendFileDates {
        #if canImport(Darwin)
        let (m, a) = (status.st_mtimespec, status.st_atimespec)
        #else
        let (m, a) = (status.st_mtim, status.st_atim)
        #endif
        return LocalSendFileDates(
            modified: format(Instant(seconds: Int64(m.tv_sec), nanoseconds: Int32(m.tv_nsec))),
            accessed: format(Instant(seconds: Int64(a.tv_sec), nanoseconds: Int32(a.tv_nsec))))
    }

    /// `2024-05-01T10:20:30.123456Z`: UTC, microseconds, as the official app's Dart side writes a
    /// date (`toIso8601String` of a UTC time) and as its Rust side and every RFC 3339 reader read it.
    /// Nil for a year outside 0001–9999.
    package static func format(_ time: Instant) -> String? {
        let days = CivilDate.floorDivide(time.seconds, 86400)
        let rest = time.seconds - days * 86400
        let (year, month, day) = CivilDate.civil(fromDays: days)
        guard (1...9999).contains(year) else { return nil }
        let micro = Int(max(0, min(999_999_999, time.nanoseconds)) / 1000)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let fraction = String(micro + 1_000_000).dropFirst()
        return "\(String(String(year + 10000).dropFirst()))-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)).\(fraction)Z"
    }

    /// An RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `t`/`z`/space accepted);
    /// nil for anything else, a missing offset included, or one longer than 64 bytes.
    package static func parse(_ text: String) -> Instant? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        var index = 0
        func number(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2), expect("Tt "),
              let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second <= 60
        else { return nil }
        var nanoseconds: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if digits < 9 { nanoseconds = nanoseconds * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
        }
        var offset: Int64 = 0
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            index += 1
        } else {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard expect("+-"), let hours = number(2), expect(":"), let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard index == bytes.count else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        // A leap second is read as the second before the next minute.
        let seconds = days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Instant(seconds: seconds, nanoseconds: Int32(nanoseconds))
    }

    /// Sets a placed file's dates (`utimensat`, never following a link); a date that does not
    /// read is left as it is (`UTIME_OMIT`). False when the file system refused (said by the caller, not fatal).
    static func apply(_ dates: LocalSendFileDates, to path: String) -> Bool {
        let modified = dates.modified.flatMap(parse)
        let accessed = dates.accessed.flatMap(parse)
        guard modified != nil || accessed != nil else { return true }
        func spec(_ time: Instant?) -> timespec {
            guard let time else { return timespec(tv_sec: 0, tv_nsec: omit) }
            return timespec(tv_sec: time_t(clamping: time.seconds), tv_nsec: Int(time.nanoseconds))
        }
        let times = [spec(accessed), spec(modified)]
        return times.withUnsafeBufferPointer { utimensat(AT_FDCWD, path, $0.baseAddress, AT_SYMLINK_NOFOLLOW) } == 0
    }

    /// `UTIME_OMIT`, which Swift does not import from the C headers.
    #if canImport(Darwin)
    private static let omit = -2
    #else
    private static let omit = (1 << 30) - 2
    #endif

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
