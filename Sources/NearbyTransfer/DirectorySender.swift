import NearbyBase
import NearbyWire
/// The empty directories of a sent tree (`send-file Bob photos/` with `photos/empty/`): an `open`
/// of kind `directory` and its reply, no data. Directories that hold files are made with them.
enum DirectorySender {
    /// Sender: asks the receiver to make `directory` under its save directory. A receiver that
    /// does not make directories (an older nearby) leaves it out: a `skipped` event says so.
    /// The offer of `directory`, written with its channel's making (`Link.openSending`).
    static func offer(_ directory: OutgoingFile) -> FrameBody.Open {
        FrameBody.Open(kind: .directory, path: directory.relative, size: 0, key: "")
    }

    /// Waits for the answer to the offer `channel` was opened with.
    static func make(_ directory: OutgoingFile, over channel: OutgoingChannel, link: any ChannelPort, sink: any EventSink) async throws(NearbyError) {
        var signals = channel.signals.makeAsyncIterator()
        guard case let .reply(reply)? = await signals.next() else {
            throw .transferFailed(path: directory.relative, code: .connectionFailed, reason: "the session ended before the peer answered")
        }
        guard !reply.accept else { return }
        // Refused with a reason of the file protocol (no save directory, cannot write): as a file is.
        if let code = reply.code {
            let reason = "the peer refused the directory: \(reply.reason ?? "no reason")"
            sink.emit(Events.FileFailed(
                transfer: "dir-\(channel.id)", direction: "send", peer: link.peer.ref, path: directory.relative, code: code.description,
                reason: reason, resumable: false))
            throw .transferFailed(path: directory.relative, code: code, reason: reason)
        }
        sink.emit(Events.Skipped(FileList.Skipped(
            path: directory.relative, reason: "an empty directory the receiver did not make (an older nearby): \(reply.reason ?? "refused")")))
    }
}
