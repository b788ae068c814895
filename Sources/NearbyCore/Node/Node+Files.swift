import Foundation

/// Sending files: the node finds the session (inviting first) and opens a channel of the link per
/// file; `FileSender` does the rest.
extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed), one after another.
    public func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        var before: UInt64 = 0
        for (index, file) in files.enumerated() {
            // Several files: each progress event also says where the whole batch is.
            let batch = files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil
            before += file.size
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            try await link.offerFile(file, sender: identity.peerID, sink: sink, batch: batch)
        }
        for directory in directories {
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            try await link.offerDirectory(directory, sink: sink)
        }
    }
}
