import Crypto

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file sent again whose complete copy is already where it would go: the same name, the same
/// size and the same SHA-256 mean the same file, so no second copy ("mid (1).bin") is made. Only a
/// regular file of exactly that size is read, on NIO's thread pool (`Blocking`); cancelling the
/// caller stops the read at its next block.
package enum AlreadyThere {
    /// The path of the file at `directory/name` when it holds exactly the bytes whose SHA-256 is
    /// `sha256` (`size` of them); nil otherwise.
    static func copy(of sha256: String, size: UInt64, in directory: String, as name: String) async -> String? {
        let path = directory + "/" + name
        // Mostly there is none (a new file): known from one lstat, without a hop to the pool.
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, UInt64(max(0, info.st_size)) == size else { return nil }
        let held = try? await Blocking.run { cancellation in holds(path, sha256: sha256, size: size, cancellation: cancellation) }
        return held == true ? path : nil
    }

    /// Whether a regular file of exactly `size` bytes is at `path` (one lstat).
    package static func sameSize(_ size: UInt64, at path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && UInt64(max(0, info.st_size)) == size
    }

    /// The SHA-256 (hex) of the regular file at `directory/name` when it has exactly `size` bytes:
    /// what we tell a sender that compares before it sends (`OpenReply.heldSHA256`). One lstat when
    /// there is none or its size differs; else read on the pool, its descriptor charged to
    /// `account` (none to spare: nil, and the file is sent as if nothing were there).
    package static func held(size: UInt64, in directory: String, as name: String, charging account: ResourceBudget.Account) async -> String? {
        let path = directory + "/" + name
        guard sameSize(size, at: path) else { return nil }
        guard case let .success(charge) = account.takeFile() else { return nil }
        defer { charge.release() }
        return try? await Blocking.run { cancellation in sha256(of: path, size: size, cancellation: cancellation) }
    }

    static func holds(_ path: String, sha256 wanted: String, size: UInt64, cancellation: Blocking.Cancellation? = nil) -> Bool {
        sha256(of: path, size: size, cancellation: cancellation) == wanted
    }

    /// The SHA-256 (hex) of the regular file at `path` (not a link) when it has exactly `size` bytes.
    private static func sha256(of path: String, size: UInt64, cancellation: Blocking.Cancellation?) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var stats = stat()
        guard fstat(fd, &stats) == 0, (stats.st_mode & S_IFMT) == S_IFREG, UInt64(max(0, stats.st_size)) == size else { return nil }
        var hasher = SHA256()
        guard Transfer.hash(fd, count: size, into: &hasher, cancellation: cancellation) else { return nil }
        return Transfer.hex(hasher.finalize())
    }
}
