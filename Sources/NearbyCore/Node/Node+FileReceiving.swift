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
    nonisolated func fileOffered(_ offer: FrameBody.Open, channel id: UInt32, on link: Link) async {
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
        await link.send(FrameBody.frame(.openReply, FrameBody.OpenReply(
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
        await link.send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: reason), channel: channel))
    }
}
