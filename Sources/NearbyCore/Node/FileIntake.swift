import Foundation
import NIOCore
import NearbyBase
import NearbyWire
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Receiving files and empty directories, the node's part: the policy (whether to take an offer at
/// all, and where), and the `FileReceiver` it makes, which the link's channel table then owns and
/// drives. An offer is answered from what is on disk (a partial file to resume) without creating
/// anything; the partial file is made only when the sender starts, so an offer that never sends a
/// byte leaves nothing behind and holds no descriptor.
struct FileIntake: FileMaking {
    let configuration: NodeConfiguration
    let events: any EventSink
    /// The partial files being written, over every link, and the quota on strangers' partials.
    let partials: PartialFiles
    /// Runs work as a child of the node.
    let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void
    /// The peer broke the protocol: an event says so and the link is cut (`Node.violated`).
    let violated: @Sendable (Link, String) -> Void

    func fileOffered(_ offer: FrameBody.Open, channel id: UInt32, on link: Link) async {
        guard offer.kind == .file || offer.kind == .directory || offer.kind == .bundle else {
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
        if offer.kind == .bundle { return await bundleOffered(offer, channel: id, on: link) }
        let comparing = link.peer.features.contains(FrameBody.thereFeature)
        let destination = ([saveDirectory] + parts.dropLast() + [parts.last ?? "unnamed"]).joined(separator: "/")
        if comparing, AlreadyThere.sameSize(offer.size, at: destination) {
            // Hashing the copy there takes a while for a big file: not on the link's task, which
            // goes on reading meanwhile (a link whose task waits hears nothing, and its silence
            // would count against the peer).
            let intake = self
            spawn { await intake.answer(offer, parts: parts, channel: id, in: saveDirectory, on: link, comparing: true) }
            return
        }
        await answer(offer, parts: parts, channel: id, in: saveDirectory, on: link, comparing: comparing)
    }

    /// Takes a file offer: its receiver in the link's table, and the answer.
    private func answer(_ offer: FrameBody.Open, parts: [String], channel id: UInt32, in saveDirectory: String, on link: Link, comparing: Bool) async {
        let file = await receiver(for: offer, parts: parts, channel: id, in: saveDirectory, on: link, resuming: true, comparing: comparing)
        guard await link.accept(id, receiving: file) else { return partials.release(file.partial) }
    }

    /// The receiver of a file offered on `id` (on a channel of its own, or in a bundle), its partial
    /// file named and claimed: with `resuming`, what an interrupted transfer left of it is offered;
    /// with `comparing` (a sender that speaks `there`), the hash of a complete file of its size
    /// already at its name (`AlreadyThere.held`).
    func receiver(
        for offer: FrameBody.Open, parts: [String], channel id: UInt32, in saveDirectory: String, on link: Link, resuming: Bool,
        comparing: Bool = false
    ) async -> FileReceiver {
        let relative = parts.joined(separator: "/")
        let directory = ([saveDirectory] + parts.dropLast()).joined(separator: "/")
        let name = parts.last ?? "unnamed"
        let fileKey = String(offer.key.filter { $0.isHexDigit }.prefix(32))
        let stranger = link.account.isStranger
        var partial = "\(directory)/" + Transfer.partialName(of: name, key: fileKey, from: link.peer.id.rawValue, stranger: stranger)
        // The same file arriving twice at once: the second gets a partial file of its own (and
        // starts from zero) rather than sharing the one being written.
        var resume: FileReceiver.Resume?
        if partials.claim(partial) {
            if resuming { resume = await FileReceiver.resumable(partial, upTo: offer.size, charging: link.account) }
        } else {
            partial = "\(directory)/" + Transfer.partialName(
                of: name, key: fileKey, from: link.peer.id.rawValue, alone: "-\(id)-\(UInt32.random(in: 0...UInt32.max))",
                stranger: stranger)
            _ = partials.claim(partial)
        }
        let held = comparing ? await AlreadyThere.held(size: offer.size, in: directory, as: name, charging: link.account) : nil
        return FileReceiver(
            transfer: String(fileKey.prefix(12)) + "-\(id)", channel: id, peer: link.peer.ref,
            relative: relative, directory: directory, name: name, partial: partial, size: offer.size, resume: resume,
            held: held, stranger: stranger, modified: offer.modified, services: receiving(on: link))
    }

    /// A bundle of small files (`Bundle`): taken whole when it is within the bounds, each file then
    /// made as a file channel's (`BundleReceiver`).
    func bundleOffered(_ offer: FrameBody.Open, channel id: UInt32, on link: Link) async {
        guard let saveDirectory = configuration.saveDirectory else { return }
        guard offer.size <= Bundle.maxBytes else {
            return await refuse(id, on: link, reason: "a bundle of more than \(Bundle.maxBytes) bytes")
        }
        let bundle = BundleReceiver(channel: id, announced: offer.size, saveDirectory: saveDirectory, intake: self, link: link)
        _ = await link.accept(id, bundle: bundle)
    }

    /// What a file receiver on `link` needs of the node.
    func receiving(on link: Link) -> FileReceiver.Services {
        FileReceiver.Services(
            events: events, partials: partials, root: configuration.saveDirectory, spawn: spawn,
            violated: { what in violated(link, what) })
    }

    /// Refuses an offer: nothing was made for it.
    func refuse(_ channel: UInt32, on link: Link, reason: String) async { await link.refuse(channel, reason: reason) }

    /// Receiver: makes the offered empty directory under the save directory (the path cleaned as
    /// a file's is), and answers. A stranger's counts against the quota on strangers' directories
    /// (`PartialFiles.makeOffered`): past it the channel is refused with code `quota`.
    func directoryOffered(_ parts: [String], in saveDirectory: String, channel: UInt32, on link: Link) async {
        guard !parts.isEmpty else { return await refuse(channel, on: link, reason: "a directory without a name") }
        var refused: PartialFiles.Refused?
        if link.account.isStranger {
            refused = partials.makeOffered(parts, below: saveDirectory, owner: link.peer.id.rawValue)
        } else {
            do {
                try FileManager.default.createDirectory(atPath: ([saveDirectory] + parts).joined(separator: "/"), withIntermediateDirectories: true)
            } catch {
                refused = .init(code: .ioError, reason: "cannot create \(parts.joined(separator: "/")): \(error.localizedDescription)")
            }
        }
        if let refused {
            events.emit(Events.FileFailed(
                transfer: "dir-\(channel)", direction: "receive", peer: link.peer.ref, path: parts.joined(separator: "/"),
                code: refused.code.description, reason: refused.reason, resumable: false))
        }
        await link.answerDirectory(channel, refused: refused)
    }

    /// A file offer to a node that was not told where files go: refused, with the reason on both sides.
    func refuseUnconsented(_ offer: FrameBody.Open, relative: String, on link: Link, channel: UInt32) async {
        let fileKey = String(offer.key.filter { $0.isHexDigit }.prefix(12))
        events.emit(Events.FileFailed(
            transfer: fileKey + "-\(channel)", direction: "receive", peer: link.peer.ref, path: relative, code: "no-save-dir",
            reason: "refused a file from \(link.peer.name): this node takes no files; to accept them, \(SaveDirectory.howToEnable)",
            resumable: false))
        await link.refuse(channel, reason: "the node takes no files (it was started without \(Spelling.option(.saveDirectory)))", code: .noSaveDir)
    }
}
