import Foundation

/// Sending files: the node finds the session (inviting first); `FolderSender` sends the files, many
/// at once, each on a channel of the link.
extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed).
    public func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
        let sender = identity.peerID
        try await FolderSender.send(files) { (file: OutgoingFile, batch: Events.Progress.Batch?) async throws(NearbyError) in
            try await link.offerFile(file, sender: sender, sink: sink, batch: batch)
        }
        for directory in directories {
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            try await link.offerDirectory(directory, sink: sink)
        }
    }
}
