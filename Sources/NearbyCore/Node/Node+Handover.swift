/// A sender that lost its link and came back (`ResumingTransfer`) offers its file again on a new
/// session, maybe before the old one — replaced, still closing — has let go of the partial file.
/// The offer waits for that (at most `handover`), so the file resumes from what arrived instead of
/// starting again from zero beside it.
extension Node {
    static let handover = Duration.seconds(2)

    /// Claims `partial` for an offer on `link`; when another link of the same peer holds it, waits
    /// for that link to be gone first.
    nonisolated func claimPartial(_ partial: String, for link: Link) async -> Bool {
        if partials.claim(partial) { return true }
        let older = await links(of: link.peer.id, besides: link)
        guard !older.isEmpty else { return false }
        await Link.untilDetached(older, by: .now + Self.handover)
        return partials.claim(partial)
    }

    /// The peer's links other than `link`: sessions it replaced, still closing.
    private func links(of peer: PeerID, besides link: Link) -> [Link] {
        links.filter { $0 !== link && $0.peer.id == peer && sessions[peer] !== $0 }
    }
}
