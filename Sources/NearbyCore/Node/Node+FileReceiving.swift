import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Receiving files, the node's part: the policy (whether to take an offer at all, and where), and the
/// `FileReceiver` it makes, which the link's channel table then owns and drives. An offer is
/// answered from what is on disk (a partial file to resume) without creating anything; the partial
/// file is made only when the sender starts, so an offer that never sends a byte leaves nothing
/// behind and holds no descriptor.
extension Node {
    nonisolated func fileOffered(_ offer: Control.Open, channel id: UInt32, on link: Link) async {
        guard offer.kind == .file || offer.kind == .directory else {
            await refuse(id, on: link, reason: "this node takes no \(offer.kind) channels")
            return
        }
        let parts = SafePath.components(of: offer.path)
        let relative = parts.joined(separator: "/")
        guard let saveDirectory = configuration.saveDirectory else {
            await refuseUnconsented(offer, relative: relative, on: link, channel: id)
            return
        }
        if offer.kind == .directory { return await directoryOffered(parts, in: saveDirectory, channel: id, on: link) }
        let directory = ([saveDirectory] + parts.dropLast()).joined(separator: "/")
        let name = parts.last ?? "unnamed"
        let fileKey = String(offer.key.filter { $0.isHexDigit }.prefix(32))
        let stranger = link.account.isStranger
        var partial = "\(directory)/" + Transfer.partialName(of: name, key: fileKey, from: link.peer.id.rawValue, stranger: stranger)
        // The same file arriving twice at once: the second gets a partial file of its own (and
        // starts from zero) rather than sharing the one being written.
        var resume: FileReceiver.Resume?
        if partials.claim(partial) {
            resume = FileReceiver.resumable(partial, upTo: offer.size, charging: link.account)
        } else {
            partial = "\(directory)/" + Transfer.partialName(
                of: name, key: fileKey, from: link.peer.id.rawValue, alone: "-\(id)-\(UInt32.random(in: 0...UInt32.max))",
                stranger: stranger)
            _ = partials.claim(partial)
        }
        let file = FileReceiver(
            transfer: String(fileKey.prefix(12)) + "-\(id)", channel: id, peer: link.peer.ref,
            relative: relative, directory: directory, name: name, partial: partial, size: offer.size, resume: resume,
            stranger: stranger, services: receiving)
        guard link.channels.accept(id, .receiving(file)) else { return partials.release(partial) }
        await link.send(Control.frame(.openReply, Control.OpenReply(
            accept: true, offset: resume?.bytes ?? 0, prefixSHA256: resume.map { Transfer.hex($0.hasher.finalize()) }, reason: nil),
            channel: id))
    }

    /// What a file receiver needs of the node.
    nonisolated var receiving: FileReceiver.Services {
        FileReceiver.Services(
            events: events, partials: partials, root: configuration.saveDirectory, spawn: { [self] job in spawn(job) },
            violated: { [self] link, what in violated(link, what) })
    }

    /// Refuses an offer: nothing was made for it.
    nonisolated func refuse(_ channel: UInt32, on link: Link, reason: String) async {
        link.channels.finish(channel)
        await link.send(Control.frame(.openReply, Control.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason), channel: channel))
    }
}

extension Transfer {
    /// The hidden name of the partial file for `name` from the peer `peer`, with the sender's `key`
    /// (and `alone` when the same file is already arriving on another channel): the name's first
    /// 64 bytes for people, then a digest of all three, so that any legal name keeps its partial
    /// under the file system's name limit (255 bytes) and a peer resumes only its own partials. A
    /// stranger's digest starts with `s-`, so that a node finds them again after a restart
    /// (`PartialFiles.adopt`). LocalSend's uploads are named the same way.
    public static func partialName(of name: String, key: String, from peer: String, alone: String = "", stranger: Bool = false) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(peer)\u{0}\(name)\u{0}\(key)".utf8))
        var shown = String.UnicodeScalarView()
        var bytes = 0
        for scalar in name.unicodeScalars {
            bytes += String(scalar).utf8.count
            if bytes > 64 { break }
            shown.append(scalar)
        }
        return ".\(String(shown)).\(stranger ? "s-" : "")\(Hex.encode(hasher.finalize()).prefix(32))\(alone).nearby-part"
    }

    /// `pwrite(2)` until everything is written, retrying on EINTR. Returns 0, or the errno that
    /// stopped it. Public for the other protocols' receivers (LocalSend), which write files the same way.
    public static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) -> Int32 {
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
