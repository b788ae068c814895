import Foundation

/// The empty directories of a sent tree (`send-file Bob photos/` with `photos/empty/`): an `open`
/// of kind `directory` and its reply, no data. Directories that hold files are made with them.
extension Node {
    /// Sender: asks the receiver to make `directory` under its save directory. A receiver that
    /// does not make directories (an older nearby) leaves it out: a `skipped` event says so.
    nonisolated static func make(_ directory: OutgoingFile, over channel: OutgoingChannel, link: Link, sink: any EventSink) async throws(NearbyError) {
        var signals = channel.signals.makeAsyncIterator()
        await link.send(FrameBody.frame(.open, FrameBody.Open(kind: .directory, path: directory.relative, size: 0, key: ""), channel: channel.id))
        guard case let .reply(reply)? = await signals.next() else {
            throw .transferFailed(path: directory.relative, code: "connection-failed", reason: "the session ended before the peer answered")
        }
        guard !reply.accept else { return }
        // Refused with a reason of the file protocol (no save directory, cannot write): as a file is.
        if let code = reply.code {
            let reason = "the peer refused the directory: \(reply.reason ?? "no reason")"
            sink.emit(Events.FileFailed(
                transfer: "dir-\(channel.id)", direction: "send", peer: link.peer.ref, path: directory.relative, code: code.description,
                reason: reason, resumable: false))
            throw .transferFailed(path: directory.relative, code: code.description, reason: reason)
        }
        sink.emit(Events.Skipped(FileList.Skipped(
            path: directory.relative, reason: "an empty directory the receiver did not make (an older nearby): \(reply.reason ?? "refused")")))
    }

    /// Receiver: makes the offered empty directory under the save directory (the path cleaned as
    /// a file's is), and answers. A stranger's counts against the quota on strangers' directories
    /// (`PartialFiles.makeOffered`): past it the channel is refused with code `quota`.
    nonisolated func directoryOffered(_ parts: [String], in saveDirectory: String, channel: UInt32, on link: Link) async {
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
        link.channels.finish(channel)
        if let refused {
            events.emit(Events.FileFailed(
                transfer: "dir-\(channel)", direction: "receive", peer: link.peer.ref, path: parts.joined(separator: "/"),
                code: refused.code.description, reason: refused.reason, resumable: false))
            return await link.send(FrameBody.frame(
                .openReply, FrameBody.OpenReply(accept: false, offset: 0, prefixSHA256: nil, reason: refused.reason, code: refused.code), channel: channel))
        }
        await link.send(FrameBody.frame(.openReply, FrameBody.OpenReply(accept: true, offset: 0, prefixSHA256: nil, reason: nil), channel: channel))
    }
}
