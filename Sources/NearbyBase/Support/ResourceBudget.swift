#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Everything a peer can make this process hold, counted against one budget: each resource is
/// charged by its owner (a connection, a link's incoming file) when it takes it and given back when
/// that owner ends, so no path around one bound reopens the hole another closed.
///
/// Descriptors: TCP connections (in and out, sessions included) and the files peers make the node
/// open share one limit, well below `RLIMIT_NOFILE`. Running out is not an error one can handle
/// everywhere: libdispatch's worker monitor opens `/proc/TID/stat` every second and aborts the
/// process (SIGILL) when that open fails, and `known_peers`, the control socket and short reads
/// (a resume's hash) need descriptors of their own. So a quarter of the limit (at least 64) is never
/// handed out. Within the budget, files held open for strangers (peers `--auto-accept` let in) have
/// a smaller share, and one stranger's link a share of that, so strangers never crowd out the
/// connections and files of the peers you chose.
///
/// Memory: bytes a node holds for its peers, per link and per node — messages arriving and waiting
/// for the node (`frames`, with `WaitingFrames` charging each link), the bulk reads of links
/// carrying files or streams (`bulkReads`), event lines waiting for stdout (`OutputQueue`, bounded
/// by `Limits.output`) and for each control client (`Limits.controlClientBytes`).
/// Disk: the strangers' partial files and empty directories in the save directory (`Limits.disk`,
/// kept by each node's `PartialFiles`). Every number is in `Limits`, each with its environment
/// variable (docs/security.md, "One budget").
package final class ResourceBudget: Sendable {
    package struct Limits: Sendable, Equatable {
        /// Connections and open files together.
        package var descriptors: Int
        /// Files open for strangers at once, all of them together.
        package var strangerFiles: Int
        /// Files open at once for one stranger's link.
        package var strangerFilesPerLink: Int
        /// Messages held whole while they arrive or wait for the node, over every link
        /// (`NEARBY_FRAME_BUDGET_BYTES`, 4 MiB).
        package var frameBytes = 4 << 20
        /// Room for links carrying files or streams to read in bulk, 2 MiB each
        /// (`NEARBY_BULK_READ_BUDGET_BYTES`, 16 MiB).
        package var bulkReadBytes = 16 << 20
        /// Event lines waiting for stdout (`NEARBY_OUTPUT_QUEUE_BYTES`, 2 MiB; dropped past 8 MiB).
        package var output = OutputQueue.Limits(bytes: 2 << 20, dropAt: 8 << 20)
        /// Event lines waiting for one control client (`NEARBY_CONTROL_CLIENT_QUEUE_BYTES`, 1 MiB).
        package var controlClientBytes = 1 << 20
        /// Strangers' partial files and empty directories (`NEARBY_PARTIAL_*`).
        package var disk = PartialQuota.Limits()

        package init(descriptors: Int, strangerFiles: Int? = nil, strangerFilesPerLink: Int = 16) {
            self.descriptors = max(1, descriptors)
            self.strangerFiles = max(0, min(strangerFiles ?? descriptors / 4, self.descriptors))
            self.strangerFilesPerLink = max(0, strangerFilesPerLink)
        }

        /// The limits for a process allowed `descriptors` open files, with the environment's
        /// overrides: every variable of docs/security.md's table, read here.
        static func forProcess(descriptors: Int, environment: [String: String]) -> Limits {
            let budget = ResourceBudget.limit(descriptors: descriptors)
            func count(_ name: String) -> Int? { environment[name].flatMap(Int.init).flatMap { $0 >= 0 ? $0 : nil } }
            var limits = Limits(
                descriptors: budget, strangerFiles: count("NEARBY_STRANGER_FILES"),
                strangerFilesPerLink: count("NEARBY_STRANGER_FILES_PER_PEER") ?? 16)
            limits.frameBytes = count("NEARBY_FRAME_BUDGET_BYTES") ?? limits.frameBytes
            limits.bulkReadBytes = count("NEARBY_BULK_READ_BUDGET_BYTES") ?? limits.bulkReadBytes
            limits.output = .standard(environment)
            limits.controlClientBytes = count("NEARBY_CONTROL_CLIENT_QUEUE_BYTES") ?? limits.controlClientBytes
            limits.disk = .from(environment: environment)
            return limits
        }
    }

    /// Why an open was refused: a sentence for the peer and the event.
    package enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case descriptors(limit: Int)
        case strangerFiles(limit: Int)
        case strangerFilesPerLink(limit: Int)

        package var description: String {
            switch self {
            case let .descriptors(limit):
                "the node holds as many connections and open files as it allows (\(limit)); try again later"
            case let .strangerFiles(limit):
                "the node holds as many files open for peers it does not know as it allows (\(limit)); try again later"
            case let .strangerFilesPerLink(limit):
                "this session already has \(limit) files open, the most a peer the node does not know may; send fewer at once"
            }
        }
    }

    /// The process's budget, from `RLIMIT_NOFILE` and the environment when the process starts.
    package static let shared = ResourceBudget(
        limits: .forProcess(descriptors: descriptorLimit(), environment: ProcessInfo.processInfo.environment))
    /// Never more descriptors than this, whatever the limit: each connection costs memory too.
    package static let ceiling = 4096

    package let limits: Limits
    /// Messages arriving and waiting, over every link (`ReadThrottle`, `WaitingFrames`).
    package let frames: MemoryBudget
    /// The big read buffers of links carrying files or streams.
    package let bulkReads: MemoryBudget
    private struct Counts {
        var descriptors = 0
        var strangerFiles = 0
    }
    private let counts = Locked(Counts())

    package init(limits: Limits) {
        self.limits = limits
        frames = MemoryBudget(limit: limits.frameBytes)
        bulkReads = MemoryBudget(limit: limits.bulkReadBytes)
    }

    /// The descriptor budget for a process allowed `descriptors` open files: a quarter (at least
    /// 64) kept back.
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

    // MARK: Connections

    /// Takes a descriptor for one connection; false when the budget is spent.
    package func takeConnection() -> Bool {
        counts.withLock { counts in
            guard counts.descriptors < limits.descriptors else { return false }
            counts.descriptors += 1
            return true
        }
    }

    package func giveConnection() { counts.withLock { $0.descriptors -= 1 } }

    /// Takes `count` descriptors at once for what a local client hands the node (a stream's stdin
    /// and stdout, `PassedDescriptor`): all of them, or none and false when the budget cannot hold them.
    package func takeDescriptors(_ count: Int) -> Bool {
        counts.withLock { counts in
            guard counts.descriptors + count <= limits.descriptors else { return false }
            counts.descriptors += count
            return true
        }
    }

    package func giveDescriptors(_ count: Int) { counts.withLock { $0.descriptors -= count } }

    /// Descriptors charged now (connections and files).
    package var descriptorsInUse: Int { counts.withLock { $0.descriptors } }
    package var strangerFilesInUse: Int { counts.withLock { $0.strangerFiles } }

    // MARK: Accounts

    /// What one link holds: the owner its files are charged to.
    package func account() -> Account { Account(budget: self) }

    /// One link's share of the budget. Whether its peer is a stranger is known once the session
    /// starts (`markStranger`); files opened after that are counted as a stranger's.
    package final class Account: Sendable {
        let budget: ResourceBudget
        private struct State {
            var stranger = false
            var files = 0
        }
        private let state = Locked(State())

        init(budget: ResourceBudget) { self.budget = budget }

        package func markStranger() { state.withLock { $0.stranger = true } }
        package var isStranger: Bool { state.withLock { $0.stranger } }
        /// Files this link holds open now.
        package var files: Int { state.withLock { $0.files } }

        /// Charges one open file to this link: the charge to give back when the file is closed,
        /// or why it may not be opened.
        package func takeFile() -> Result<Charge, Refusal> {
            state.withLock { (state: inout State) -> Result<Charge, Refusal> in
                let limits = budget.limits
                if state.stranger, state.files >= limits.strangerFilesPerLink {
                    return .failure(.strangerFilesPerLink(limit: limits.strangerFilesPerLink))
                }
                let taken = budget.counts.withLock { (counts: inout Counts) -> Result<Void, Refusal> in
                    guard counts.descriptors < limits.descriptors else { return .failure(.descriptors(limit: limits.descriptors)) }
                    if state.stranger {
                        guard counts.strangerFiles < limits.strangerFiles else { return .failure(.strangerFiles(limit: limits.strangerFiles)) }
                        counts.strangerFiles += 1
                    }
                    counts.descriptors += 1
                    return .success(())
                }
                if case let .failure(refusal) = taken { return .failure(refusal) }
                state.files += 1
                return .success(Charge(account: self, stranger: state.stranger))
            }
        }

        fileprivate func give(stranger: Bool) {
            state.withLock { $0.files -= 1 }
            budget.counts.withLock { counts in
                counts.descriptors -= 1
                if stranger { counts.strangerFiles -= 1 }
            }
        }
    }

    /// One descriptor charged to an account; given back once, however many times `release` is
    /// called (an owner may end by more than one path).
    package final class Charge: Sendable {
        private let account: Account
        private let stranger: Bool
        private let released = Atomic(false)

        fileprivate init(account: Account, stranger: Bool) {
            self.account = account
            self.stranger = stranger
        }

        package func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            account.give(stranger: stranger)
        }
    }
}
