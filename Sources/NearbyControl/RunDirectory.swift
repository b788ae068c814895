import Foundation

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory that holds a node's lock and control socket (`$XDG_RUNTIME_DIR/nearby`, else
/// `$NEARBY_HOME/run`). Whoever can write there can make the node follow a symlink or answer in its
/// place, so a directory that exists already must be a real directory (not a symlink), owned by
/// this user, with mode 0700; otherwise the node refuses to start (exit 8, code
/// `unsafe-run-directory`). The lock is opened with `O_NOFOLLOW` and must be a regular file of ours
/// with one link before it is truncated; the socket is created under a 0077 umask.
package enum RunDirectory {
    /// Creates the directory 0700, or checks the one that is there.
    package static func prepare(_ directory: String) throws(NearbyError) {
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty {
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw .ioFailure(path: directory, reason: "cannot create the run directory: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw .ioFailure(path: directory, reason: "cannot inspect the run directory: \(String(cString: strerror(errno)))")
        }
        try check(directory, info)
    }

    static func check(_ directory: String, _ info: stat) throws(NearbyError) {
        guard (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFDIR) else {
            throw .unsafeRunDirectory(path: directory, reason: "it is not a directory (a symlink?)")
        }
        guard info.st_uid == getuid() else {
            throw .unsafeRunDirectory(path: directory, reason: "it belongs to uid \(info.st_uid), not to this user (uid \(getuid()))")
        }
        let mode = info.st_mode & 0o7777
        guard mode == 0o700 else {
            throw .unsafeRunDirectory(path: directory, reason: "its mode is \(String(mode, radix: 8)), not 700")
        }
    }

    /// Opens (creating) the lock file without following a symlink; refuses anything but a regular
    /// file of ours with a single link. Nothing is truncated here.
    package static func openLock(_ path: String) throws(NearbyError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let error = errno
            if error == ELOOP { throw .unsafeRunDirectory(path: path, reason: "the lock file is a symlink") }
            throw .ioFailure(path: path, reason: String(cString: strerror(error)))
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG), info.st_uid == getuid(), info.st_nlink == 1 else {
            close(fd)
            throw .unsafeRunDirectory(path: path, reason: "the lock file is not a regular file of this user with a single link")
        }
        return fd
    }

    /// Runs `body` (which creates the control socket) with umask 0077, so the socket is never
    /// reachable by others, not even between bind and chmod.
    package static func withPrivateUmask<T>(_ body: () async throws -> T) async rethrows -> T {
        let previous = umask(0o077)
        defer { umask(previous) }
        return try await body()
    }
}
