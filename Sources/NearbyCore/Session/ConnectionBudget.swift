#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// How many TCP connections (in and out, sessions included) this process keeps open at once:
/// well below its file-descriptor limit, so that a flood of connections never makes the process
/// run out. Running out is not an error one can handle everywhere: libdispatch's worker monitor
/// opens `/proc/TID/stat` every second and aborts the process (SIGILL) when that open fails, and
/// `known_peers`, received files and the control socket need descriptors of their own. So a quarter
/// of the limit (at least 64) is kept for everything else, and a connection beyond the budget is
/// closed as soon as it is accepted (or not opened, when it would be ours).
public final class ConnectionBudget: Sendable {
    /// The process's budget, from `RLIMIT_NOFILE` when the process starts.
    public static let shared = ConnectionBudget(limit: ConnectionBudget.limit(descriptors: ConnectionBudget.descriptorLimit()))
    /// Never more than this, whatever the descriptor limit: each connection costs memory too.
    public static let ceiling = 4096

    public let limit: Int
    private let open = Atomic<Int>(0)

    public init(limit: Int) { self.limit = max(1, limit) }

    /// The budget for a process allowed `descriptors` open files.
    static func limit(descriptors: Int) -> Int {
        let reserve = max(64, descriptors / 4)
        return min(ceiling, max(8, descriptors - reserve))
    }

    /// The soft `RLIMIT_NOFILE` (1024 when it cannot be read, or is unlimited).
    static func descriptorLimit() -> Int {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1024 }
        // RLIM_INFINITY is the largest value: clamped, it is more than the ceiling needs.
        return Int(clamping: limits.rlim_cur)
    }

    /// Takes a place for one connection; false when the budget is spent.
    public func take() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    public func give() { open.subtract(1, ordering: .relaxed) }

    public var inUse: Int { open.load(ordering: .relaxed) }
}
