#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A sender's modification time as `futimens` takes it: the access time now, the modification time
/// the sender's; nil for none. Any 64-bit count of nanoseconds is a time before the year 2555.
enum FileTimes {
    /// `UTIME_NOW`, which Swift does not import (a macro of an expression).
    #if canImport(Darwin)
    static let now = -1
    #else
    static let now = (1 << 30) - 1
    #endif

    static func modification(_ nanoseconds: UInt64?) -> [timespec]? {
        guard let nanoseconds, nanoseconds > 0 else { return nil }
        let seconds = Int(nanoseconds / 1_000_000_000), rest = Int(nanoseconds % 1_000_000_000)
        return [timespec(tv_sec: 0, tv_nsec: now), timespec(tv_sec: seconds, tv_nsec: rest)]
    }
}
