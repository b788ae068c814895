import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peers pinned by full public key (`known_peers` beside the identity): one line per peer,
/// `<id> <base64 SPKI DER> <name>`. A known ID that shows up with another key is refused.
///
/// Fails closed: a file that cannot be read, is not valid UTF-8, has a line that is not a pin, or is
/// larger than `maxBytes` refuses every connection (the error names the file) rather than meaning
/// "no pins". The handshake only checks (`verify`); a peer is pinned (`pin`) once it reached a
/// session. Pins are appended with `O_APPEND|O_NOFOLLOW`; an existing file is never re-created. The
/// parsed file is cached and read again only when its inode, size or modification time change.
public final class KnownPeers: Sendable {
    public let path: String
    /// A file larger than this is refused, not read (a pin line is under 250 bytes: ~16 000 peers).
    public static let maxBytes = 4 << 20

    private struct Snapshot {
        var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = -1, mtime = timespec()
        var pins: [String: Substring] = [:]
    }
    private let state = Mutex<Snapshot?>(nil)

    public init(paths: NearbyPaths) { path = paths.home + "/known_peers" }

    public enum Verdict: Equatable, Sendable { case known, new, changed }

    /// Checks `key` for `id` against the pins, without pinning anything.
    public func verify(id: PeerID, key: Data) throws(NearbyError) -> Verdict {
        try state.withLock { snapshot throws(NearbyError) -> Verdict in
            try verdict(id: id, key: key.base64EncodedString(), in: &snapshot)
        }
    }

    /// Pins `key` for `id` when the peer is new; `.changed` when another key is pinned for it.
    public func pin(id: PeerID, key: Data, name: String) throws(NearbyError) -> Verdict {
        let encoded = key.base64EncodedString()
        return try state.withLock { snapshot throws(NearbyError) -> Verdict in
            let found = try verdict(id: id, key: encoded, in: &snapshot)
            guard found == .new else { return found }
            let safeName = String(String.UnicodeScalarView(name.unicodeScalars.map {
                $0.properties.generalCategory == .control || $0.properties.generalCategory == .lineSeparator
                    || $0.properties.generalCategory == .paragraphSeparator ? " " : $0
            }))
            try append(Array("\(id.rawValue) \(encoded) \(safeName)\n".utf8))
            snapshot = nil
            return .new
        }
    }

    /// Backwards-compatible check-and-pin, for callers that pin on first contact.
    public func check(id: PeerID, key: Data, name: String) throws(NearbyError) -> Verdict {
        try pin(id: id, key: key, name: name)
    }

    private func verdict(id: PeerID, key: String, in snapshot: inout Snapshot?) throws(NearbyError) -> Verdict {
        let current = try load(cached: snapshot)
        snapshot = current
        guard let pinned = current.pins[id.rawValue] else { return .new }
        return pinned == key ? .known : .changed
    }

    private func failure(_ reason: String) -> NearbyError {
        .ioFailure(path: path, reason: "known peers unusable, refusing connections until it is fixed: \(reason)")
    }

    /// The pins, from the cache when the file has not changed.
    private func load(cached: Snapshot?) throws(NearbyError) -> Snapshot {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            let error = errno
            if error == ENOENT { return Snapshot() }
            throw failure(String(cString: strerror(error)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        guard (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG) else { throw failure("not a regular file") }
        guard info.st_size <= Int64(Self.maxBytes) else { throw failure("larger than \(Self.maxBytes) bytes") }
        if let cached, cached.device == UInt64(info.st_dev), cached.inode == UInt64(info.st_ino), cached.size == Int64(info.st_size),
           cached.mtime.tv_sec == info.st_mtim.tv_sec, cached.mtime.tv_nsec == info.st_mtim.tv_nsec {
            return cached
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in buffer.baseAddress.map { read(fd, $0 + filled, buffer.count - filled) } ?? 0 }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw failure(String(cString: strerror(errno))) }
            if n == 0 { break }
            filled += n
        }
        guard let text = String(validating: bytes.prefix(filled), as: UTF8.self) else { throw failure("not valid UTF-8") }
        var snapshot = Snapshot(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), mtime: info.st_mtim)
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count >= 2, PeerID(String(fields[0])) != nil, Data(base64Encoded: String(fields[1])) != nil else {
                throw failure("line \(number + 1) is not `<peer-id> <base64 key> <name>`")
            }
            if snapshot.pins[String(fields[0])] == nil { snapshot.pins[String(fields[0])] = fields[1] }
        }
        return snapshot
    }

    /// Appends a line: `O_APPEND|O_NOFOLLOW` on the existing file, or a new file created exclusively.
    private func append(_ line: [UInt8]) throws(NearbyError) {
        var fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0, errno == ENOENT {
            let directory = (path as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd < 0, errno == EEXIST { fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard fd >= 0 else { throw failure("cannot append: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var written = 0
        while written < line.count {
            let n = line.withUnsafeBytes { buffer in buffer.baseAddress.map { write(fd, $0 + written, buffer.count - written) } ?? 0 }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw failure("cannot append: \(String(cString: strerror(errno)))") }
            written += n
        }
    }
}
