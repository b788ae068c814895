import Crypto
import Foundation
import NearbyBase
import NearbyIdentity
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What both ends of a file transfer share: the chunk and window, the file's key, hashing, partial
/// file names, writing, and the numbers events show.
package enum Transfer {
    static let chunk = ChannelMux.chunk
    /// How far a sender may run ahead of what the receiver has written: memory stays bounded (one
    /// window per channel).
    static let window = ChannelMux.defaultWindow
    /// 0666 less this process's umask (read once: setting it back at once is the only way to read it).
    package static let finishedMode: mode_t = {
        let mask = umask(0o022)
        umask(mask)
        return 0o666 & ~mask
    }()

    package static func hex(_ digest: some Sequence<UInt8>) -> String { Hex.encode(digest) }

    /// This sender's name for a file, the same on every attempt while the file is unchanged.
    static func key(sender: PeerID, file: OutgoingFile) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(sender.rawValue)\u{0}\(file.relative)\u{0}\(file.size)\u{0}\(file.modified)".utf8))
        return String(hex(hasher.finalize()).prefix(32))
    }

    /// Feeds the first `count` bytes of the file at `fd` to `hasher`. Blocks: call it from
    /// `Blocking.run`, which passes `cancellation` (checked between blocks: false once cancelled).
    static func hash(_ fd: Int32, count: UInt64, into hasher: inout SHA256, cancellation: Blocking.Cancellation? = nil) -> Bool {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var done: UInt64 = 0
        while done < count {
            if cancellation?.isCancelled == true { return false }
            let want = Int(min(UInt64(buffer.count), count - done))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(done)) }
            guard got > 0 else { return false }
            hasher.update(data: buffer[0..<got])
            done += UInt64(got)
        }
        return true
    }

    /// The hash of the first `count` bytes of the file at `fd`, read on NIO's thread pool; nil when
    /// it cannot be read or the caller was cancelled meanwhile (the read stops at the next block).
    package static func hash(_ fd: Int32, count: UInt64) async -> SHA256? {
        let state = try? await Blocking.run { cancellation -> HashState? in
            var hasher = SHA256()
            return hash(fd, count: count, into: &hasher, cancellation: cancellation) ? HashState(hasher: hasher) : nil
        }
        return state?.hasher
    }

    /// A hash's state handed back from the thread pool: a plain value, which Crypto does not mark
    /// `Sendable`.
    struct HashState: @unchecked Sendable {
        var hasher: SHA256
    }

    package static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Seconds since `start`, to the millisecond.
    package static func seconds(since start: ContinuousClock.Instant) -> Double {
        ((ContinuousClock.now - start) / .milliseconds(1)).rounded() / 1000
    }

    /// Bytes per second, whole.
    package static func rate(_ bytes: UInt64, _ seconds: Double) -> Double { seconds > 0 ? (Double(bytes) / seconds).rounded() : 0 }
}

extension Transfer {
    /// The hidden name of the partial file for `name` from the peer `peer`, with the sender's `key`
    /// (and `alone` when the same file is already arriving on another channel): the name's first
    /// 64 bytes for people, then a digest of all three, so that any legal name keeps its partial
    /// under the file system's name limit (255 bytes) and a peer resumes only its own partials. A
    /// stranger's digest starts with `s-`, so that a node finds them again after a restart
    /// (`PartialFiles.adopt`). LocalSend's uploads are named the same way.
    package static func partialName(of name: String, key: String, from peer: String, alone: String = "", stranger: Bool = false) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(peer)\u{0}\(name)\u{0}\(key)".utf8))
        var shown = String.UnicodeScalarView()
        var bytes = 0
        for scalar in name.unicodeScalars {
            bytes += scalar.utf8.count
            if bytes > 64 { break }
            shown.append(scalar)
        }
        return ".\(String(shown)).\(stranger ? "s-" : "")\(Hex.encode(hasher.finalize()).prefix(32))\(alone).nearby-part"
    }

    /// What `partialName`'s `alone` ends with for an upload that cannot be resumed (LocalSend's):
    /// such a stranger's partial is deleted at once when a later run finds it (`PartialFiles.adopt`).
    package static let unresumable = "-u"

    /// Whether `name` is a stranger's partial that cannot be resumed (`unresumable`).
    static func isUnresumablePartial(_ name: String) -> Bool { name.hasSuffix(unresumable + ".nearby-part") }

    /// `pwrite(2)` until everything is written, retrying on EINTR. Returns 0, or the errno that
    /// stopped it. Public for the other protocols' receivers (LocalSend), which write files the same way.
    package static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) -> Int32 {
        var written = 0
        while written < bytes.count {
            let n = pwrite(fd, bytes.baseAddress.map { $0 + written }, bytes.count - written, off_t(offset) + off_t(written))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += n
        }
        return 0
    }

    /// `close(2)`, for types whose own `close()` hides it.
    static func closeDescriptor(_ fd: Int32) { _ = close(fd) }
}
