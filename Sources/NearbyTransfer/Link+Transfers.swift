import NIOCore
import NearbyBase
import NearbyIdentity
import NearbyWire

/// The link's intentions that make what runs on a channel — files, directories, bundles, streams:
/// Transfer's side of `Link`, built on what the wire gives every channel (`openOffering`, `accept`,
/// `hold`, `endChannel`), so the link itself names nothing of Transfer.
extension Link {
    /// The peer's offer `id` is taken by `file`, and said so (`FileReceiver.yes`: where it resumes,
    /// the copy already here): its frames go there from now on. False once the link is gone, and
    /// nothing was said.
    package func accept(_ id: UInt32, receiving file: FileReceiver) async -> Bool {
        guard accept(id, file as any ChannelEnd) else { return false }
        await send(FrameBody.frame(.openReply, file.yes, channel: id))
        return true
    }

    /// Whether the peer takes small files in bundles (its hello lists `Bundle.feature`); an
    /// environment of `NEARBY_BUNDLES=0` sends each file alone (benchmarks, tests).
    package var takesBundles: Bool { peer.features.contains(Bundle.feature) && FolderSender.bundling }

    /// The peer's bundle offer on `id` is taken, and said so: its files' records may flow
    /// (`BundleReceiver`). False once the link is gone.
    package func accept(_ id: UInt32, bundle: BundleReceiver) async -> Bool {
        guard accept(id, bundle as any ChannelEnd) else { return false }
        await agree(id)
        return true
    }

    /// Answers the peer's offer of an empty directory on `id` once we made it, or `refused` it:
    /// either way the channel is over.
    package func answerDirectory(_ id: UInt32, refused: PartialFiles.Refused?) async {
        endChannel(id)
        let reply = FrameBody.OpenReply(accept: refused == nil, offset: 0, prefixSHA256: nil, reason: refused?.reason, code: refused?.code)
        await send(FrameBody.frame(.openReply, reply, channel: id))
    }

    /// The peer's stream offer waits for a listener: its reset and the link's end reach it meanwhile.
    package func hold(_ stream: StreamChannel) -> Bool { hold(stream.id, stream) }

    /// The held stream is taken by a listener: data may flow. False when it is no longer held.
    package func accept(_ stream: StreamChannel) -> Bool {
        holds(stream.id, stream) && accept(stream.id, stream as any ChannelEnd)
    }

    /// Whether `stream` still waits on this link (not reset, the link not gone).
    package func holds(_ stream: StreamChannel) -> Bool { holds(stream.id, stream) }

    /// A channel of ours for a file or directory we send, and our `open` on it, in one step.
    package func openSending(offering open: FrameBody.Open, results: Bool = false) throws(NearbyError) -> OutgoingChannel {
        try openOffering(open) { id in
            let channel = OutgoingChannel(id: id, results: results)
            return (channel, channel)
        }
    }

    /// Offers the peer a stream named `name` and waits for its answer: the stream, once accepted.
    /// The caller ends its channel (`endChannel`) when it is over.
    /// `held`: the peer has no listener for it yet and holds it this many seconds for one.
    package func offerStream(name: String, held: @Sendable (FrameBody.OpenReply) -> Void = { _ in }) async throws(NearbyError) -> StreamChannel {
        let stream = try openOffering(FrameBody.Open(kind: .stream, path: name, size: 0, key: "")) { [peer] id in
            let stream = StreamChannel(id: id, name: name, peer: peer.ref)
            return (stream, stream)
        }
        var replies = stream.replies.makeAsyncIterator()
        var answer = await replies.next()
        var told = false
        while let notYet = answer, notYet.waiting != nil, !notYet.accept {
            // Said once: a peer that repeats itself is not echoed.
            if !told { held(notYet) }
            told = true
            answer = await replies.next()
        }
        guard let reply = answer else {
            endChannel(stream.id)
            throw .connectionFailed("the session ended before the peer answered")
        }
        guard reply.accept else {
            endChannel(stream.id)
            throw .transferFailed(path: name.isEmpty ? "stream" : name, code: .streamRefused, reason: reply.reason ?? "refused")
        }
        return stream
    }

    /// Takes the peer's held stream and says yes: data may flow. False when it is no longer held
    /// (reset, the link gone).
    package func acceptStream(_ stream: StreamChannel) async -> Bool {
        guard accept(stream) else { return false }
        await agree(stream.id)
        return true
    }

    /// Offers the peer `file` on a channel of its own and sends it (`FileSender`), to its end.
    package func offerFile(
        _ file: OutgoingFile, sender: PeerID, sink: any EventSink, batch: Events.Progress.Batch?, permits: StartPermits? = nil
    ) async throws(NearbyError) {
        try await FileSender.send(
            file, opening: { (open: FrameBody.Open) throws(NearbyError) -> OutgoingChannel in try openSending(offering: open) },
            link: self, sender: sender, sink: sink, batch: batch, permits: permits)
    }

    /// Asks the peer to make the empty `directory` (`DirectorySender`).
    package func offerDirectory(_ directory: OutgoingFile, sink: any EventSink) async throws(NearbyError) {
        let channel = try openSending(offering: DirectorySender.offer(directory))
        defer { endChannel(channel.id) }
        try await DirectorySender.make(directory, over: channel, link: self, sink: sink)
    }

    /// Sends `files` on this link, many at once (`FolderSender`), small ones in bundles to a peer
    /// that takes them (an older one: each alone), leaving out those `delivered` already holds and
    /// adding each one sent: a retry on a new link after an outage sends only the others.
    package func sendFiles(
        _ files: [OutgoingFile], skipping delivered: DeliveredFiles, sender: PeerID, sink: any EventSink
    ) async throws(NearbyError) {
        let rest = files.filter { !delivered.contains($0) }
        var bundle: FolderSender.SendBundle?
        if takesBundles {
            bundle = { [self] (some: [(OutgoingFile, Events.Progress.Batch?)], permits: StartPermits) async throws(NearbyError) in
                try await BundleSender.send(some, link: self, sender: sender, sink: sink, permits: permits) { (file: OutgoingFile) in delivered.add(file) }
            }
        }
        try await FolderSender.send(rest, bundle: bundle) { [self] (file: OutgoingFile, batch: Events.Progress.Batch?, permits: StartPermits) async throws(NearbyError) in
            try await offerFile(file, sender: sender, sink: sink, batch: batch, permits: permits)
            delivered.add(file)
        }
    }
}

/// The files of one `send-file` delivered so far (by source), across the links of its retries.
package final class DeliveredFiles: Sendable {
    private let sources = Locked(Set<String>())
    package init() {}
    func contains(_ file: OutgoingFile) -> Bool { sources.withLock { $0.contains(file.source) } }
    func add(_ file: OutgoingFile) { _ = sources.withLock { $0.insert(file.source) } }
}
