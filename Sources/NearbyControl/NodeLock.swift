import Foundation
import NearbyBase
import NearbyIdentity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// At most one node per identity and service: an exclusive `flock` on the lock file, which the
/// kernel releases when the process dies however it dies — so a killed node's leftovers never
/// count as "running". The lock file holds the pid, for the error message.
package final class NodeLock: Sendable {
    private let fd: Int32
    package let address: NodeAddress

    package init(_ address: NodeAddress) throws(NearbyError) {
        self.address = address
        try RunDirectory.prepare(address.directory)
        let fd = try RunDirectory.openLock(address.lock)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let pid = count > 0 ? Int32(String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : nil
            throw .nodeAlreadyRunning(pid: pid, socket: address.socket)
        }
        _ = ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
        // Whatever socket is there belongs to a node that is gone.
        unlink(address.socket)
    }

    package func release() {
        unlink(address.socket)
        close(fd)
    }

    /// The nodes of `peerID` running now, from the locks in `directory`: each one's service and pid.
    package static func running(in directory: String, peerID: PeerID) -> [(service: String, pid: Int32?)] {
        let prefix = peerID.rawValue + "-", suffix = ".lock"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.sorted().compactMap { name in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
            let fd = open(directory + "/" + name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            // A lock nobody holds is a node that is gone; one we cannot take is one that runs.
            guard flock(fd, LOCK_SH | LOCK_NB) != 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            let pid = count > 0 ? Int32(String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : nil
            return (String(name.dropFirst(prefix.count).dropLast(suffix.count)), pid)
        }
    }
}
