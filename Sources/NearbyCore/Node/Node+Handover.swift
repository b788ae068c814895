import NearbyWire
/// A sender that lost its link and came back (`Resumer`) offers its file again on a new
/// session, maybe before the old one — replaced, still closing — has let go of the partial file.
/// The offer waits for that (at most `handover`), so the file resumes from what arrived instead of
/// starting again from zero beside it.
extension Node {
    static let handover = Duration.seconds(2)

    /// Waits until the peer's other links (sessions `link` replaced, still closing) are gone. Once
    /// none is left, the link is marked handed over: a link that comes later is newer and replaces
    /// this one, so its later offers (a folder's thousands) need not ask the node again.
    func handOver(to link: Link) async {
        let older = sessions.older(than: link)
        guard !older.isEmpty else { return link.handedOver.store(true, ordering: .releasing) }
        await Link.untilDetached(Array(older), by: .now + Self.handover)
    }
}
