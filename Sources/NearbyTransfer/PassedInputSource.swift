import Crypto
import NIOCore
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stream client's stdin, read by the node itself (named by the client's request): the file, from the client's
/// offset to its end, read ahead on a queue of its own (`FileReader`, without hashing). Nothing is
/// read before the first `next()`. `stop()` ends it — the client left, or the stream is over —
/// and closes the file; a `next()` after that throws, so a stream cut short never looks complete.
package final class PassedInputSource: ByteSource {
    private let reader: FileReader
    private let offset: UInt64
    private let end: UInt64
    private struct State {
        var started = false
        var stopped = false
    }
    private let state = Locked(State())
    /// The client's passed stdin, when that is what is read: its charge goes back at `stop`.
    private let passed: PassedDescriptor?

    /// Opens `path` when it is still the file the client has open (`device` and `inode`), to read
    /// from `offset`; nil otherwise (the client then copies its input over the control connection,
    /// as for a pipe).
    package init?(path: String, device: UInt64, inode: UInt64, offset: UInt64) {
        // O_NONBLOCK: a path that turned into a pipe must not block the node in open(2).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode
        else {
            close(fd)
            return nil
        }
        reader = FileReader(descriptor: fd, hashing: false)
        self.offset = offset
        end = max(offset, UInt64(max(0, info.st_size)))
        passed = nil
    }

    /// Reads the client's passed stdin when it is a regular file: from the offset the client's
    /// (shared) open file is at, to its end. Nil for anything else.
    package init?(passed descriptor: PassedDescriptor) {
        var info = stat()
        guard descriptor.isRegularFile, fstat(descriptor.fd, &info) == 0 else { return nil }
        let position = lseek(descriptor.fd, 0, SEEK_CUR)
        guard position >= 0 else { return nil }
        offset = UInt64(position)
        end = max(offset, UInt64(max(0, info.st_size)))
        reader = FileReader(descriptor: descriptor.handOver(), hashing: false)
        passed = descriptor
    }

    package func next() async throws -> ByteBuffer? {
        let start: Bool = try state.withLock { state in
            guard !state.stopped else { throw NearbyError.cancelled("the stream's client left") }
            defer { state.started = true }
            return !state.started
        }
        if start { reader.start(at: offset, end: end, hasher: SHA256()) }
        let chunk: ByteBuffer?
        do {
            chunk = try await reader.next()
        } catch FileReader.Failure.io(let code) {
            throw NearbyError.ioFailure(path: "stdin", reason: Transfer.errorText(code))
        } catch {
            throw NearbyError.ioFailure(path: "stdin", reason: "the file became shorter while it was read")
        }
        if state.withLock({ $0.stopped }) { throw NearbyError.cancelled("the stream's client left") }
        return chunk
    }

    /// No more reads; the file is closed.
    package func stop() {
        state.withLock { $0.stopped = true }
        reader.close()
        passed?.close()
    }
}
