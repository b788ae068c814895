import Foundation

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which version of a file the parsed pins are: read again only when it changed under us.
struct FileStamp: Equatable {
    var device: UInt64, inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
    }
}

/// The last part of a file, as lines.
struct FileTail {
    var lines: [Substring] = []
    /// The file was larger than what was read.
    var truncated = false
}

extension KnownPeers {
    /// `known_peers` into `state.pins`, unless the version parsed last is still the file.
    func refresh(_ state: inout KnownPeers.State) throws(NearbyError) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            let error = errno
            guard error == ENOENT else { throw failure(String(cString: strerror(error))) }
            state.pins = [:]
            state.stamp = nil
            return
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        guard (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG) else { throw failure("not a regular file") }
        let stamp = FileStamp(info)
        if stamp == state.stamp { return }
        let size = Int(min(Int64(info.st_size), Int64(Self.maxBytes)))
        var bytes = try readAll(fd, count: size)
        if Int64(info.st_size) > Int64(Self.maxBytes) {
            // Loud, never a lock-out: the pins after the bound are not checked (docs/security.md).
            if let last = bytes.lastIndex(of: UInt8(ascii: "\n")) { bytes.removeSubrange((last + 1)...) }
            NearbyLog.logger.error(
                "\(path) is \(info.st_size) bytes, over the \(Self.maxBytes >> 20) MiB that are read: the pins after the first \(bytes.count) bytes are not checked; remove peers you no longer need")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure("not valid UTF-8") }
        var pins: [String: KnownPeers.Pin] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let (id, key, name) = Self.parse(line) else {
                throw failure("line \(number + 1) is not `<peer-id> <base64 key> <name>`")
            }
            if pins[id] == nil { pins[id] = KnownPeers.Pin(key: key, name: name) }
        }
        state.pins = pins
        state.stamp = stamp
    }

    private func readAll(_ fd: Int32, count: Int) throws(NearbyError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in buffer.baseAddress.map { read(fd, $0 + filled, buffer.count - filled) } ?? 0 }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw failure(String(cString: strerror(errno))) }
            if n == 0 { break }
            filled += n
        }
        return Array(bytes.prefix(filled))
    }

    /// At most the last `limit` bytes of a file, whole lines only; nothing when it cannot be read.
    func readTail(_ file: String, limit: Int) -> FileTail {
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno != ENOENT { NearbyLog.logger.error("\(file): cannot read: \(String(cString: strerror(errno)))") }
            return FileTail()
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG) else {
            NearbyLog.logger.error("\(file): not a regular file, not read")
            return FileTail()
        }
        var tail = FileTail()
        if Int64(info.st_size) > Int64(limit) {
            tail.truncated = true
            lseek(fd, off_t(Int64(info.st_size) - Int64(limit)), SEEK_SET)
        }
        guard var bytes = try? readAll(fd, count: min(Int(info.st_size), limit)) else { return tail }
        if tail.truncated, let first = bytes.firstIndex(of: UInt8(ascii: "\n")) { bytes.removeSubrange(...first) }
        tail.lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        return tail
    }

    /// Appends a line: `O_APPEND|O_NOFOLLOW` on the existing file, or a new file created exclusively.
    /// `stamp` follows the file when it was the version parsed last, else it is cleared (read again).
    func append(_ line: String, to file: String, stamp: inout FileStamp?) throws(NearbyError) {
        var fd = open(file, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0, errno == ENOENT {
            let directory = (file as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd < 0, errno == EEXIST { fd = open(file, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard fd >= 0 else { throw writeFailure(file, "cannot append: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        let current = fstat(fd, &info) == 0 && (stamp == FileStamp(info) || (stamp == nil && info.st_size == 0))
        try writeAll(fd, Array(line.utf8), file: file)
        stamp = current && fstat(fd, &info) == 0 ? FileStamp(info) : nil
    }

    /// Replaces a file with `text`: written to a new file beside it, then renamed over it.
    func replace(_ file: String, with text: String) throws(NearbyError) {
        let temporary = file + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw writeFailure(temporary, "cannot create: \(String(cString: strerror(errno)))") }
        do throws(NearbyError) {
            try writeAll(fd, Array(text.utf8), file: temporary)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, file) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw writeFailure(file, "cannot replace: \(reason)")
        }
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8], file: String) throws(NearbyError) {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in buffer.baseAddress.map { write(fd, $0 + written, buffer.count - written) } ?? 0 }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw writeFailure(file, "cannot write: \(String(cString: strerror(errno)))") }
            written += n
        }
    }

    private func writeFailure(_ file: String, _ reason: String) -> NearbyError {
        file == path ? failure(reason) : .ioFailure(path: file, reason: reason)
    }
}
