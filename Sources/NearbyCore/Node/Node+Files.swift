import Foundation
import NearbyBase
import NearbyWire
import NearbyTransfer

/// Sending files: the node finds the session (inviting first) and gets it back after an outage
/// (`Resumer`); the link sends the files (`Link.sendFiles`, Transfer), many at once.
extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed), many at once (`FolderSender`). A link
    /// that goes mid-folder is got back for up to `retryFor` seconds (`Resumer`), and the
    /// files not delivered yet go on the new one (those cut resume from their partial files); nil:
    /// the default.
    package func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, retryFor: Double? = nil, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        let listed = files.filter { $0.directory != true }
        let offer = Offer(
            files: listed.count, bytes: listed.reduce(0) { $0 &+ $1.size }, names: listed.prefix(Offer.maxNames).map(\.relative))
        var peer = try await invite(query, context: nil, offer: offer.bounded, timeout: timeout, client: client)
        let resumer = Resumer(policy: RetryPolicy.forSeconds(retryFor), client: client, sessions: sessions, invitations: invitations)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        let sender = identity.peerID
        // The files delivered so far: a retry after an outage sends the others.
        let delivered = DeliveredFiles()
        let first = files.first?.relative ?? ""
        try await resumer.run(first, peer: &peer, sink: sink) { (link: Link, sink: any EventSink) async throws(NearbyError) in
            try await link.sendFiles(files, skipping: delivered, sender: sender, sink: sink)
        }
        for directory in directories {
            try await resumer.run(directory.relative, peer: &peer, sink: sink) { (link: Link, sink: any EventSink) async throws(NearbyError) in
                try await link.offerDirectory(directory, sink: sink)
            }
        }
    }
}
