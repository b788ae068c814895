import Foundation

/// Sending files: the node finds the session (inviting first) and opens a channel of the link per
/// file; `FileSender` does the rest.
extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed), one after another. A link that goes
    /// mid-file is got back for up to `retryFor` seconds (`ResumingTransfer`); nil: the default.
    public func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, retryFor: Double? = nil, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        var peer = try await invite(query, context: nil, timeout: timeout, client: client)
        let policy = RetryPolicy.forSeconds(retryFor)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        var before: UInt64 = 0
        let sender = identity.peerID
        for (index, file) in files.enumerated() {
            // Several files: each progress event also says where the whole batch is.
            let batch = files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil
            before += file.size
            try await resuming(file.relative, peer: &peer, policy: policy, sink: sink, client: client) { (link: Link, sink: any EventSink) async throws(NearbyError) in
                try await link.offerFile(file, sender: sender, sink: sink, batch: batch)
            }
        }
        for directory in directories {
            try await resuming(directory.relative, peer: &peer, policy: policy, sink: sink, client: client) { (link: Link, sink: any EventSink) async throws(NearbyError) in
                try await link.offerDirectory(directory, sink: sink)
            }
        }
    }
}
