extension Events {
    /// A command or node that goes on waiting, and for what: the DNS-SD daemon to come back (a node
    /// stays up and advertises again), an invitation (`nearby accept` with none pending), or a
    /// LocalSend device's person deciding on our offer (`for: answer`, the device in `peer`).
    package struct Waiting: EventBody {
        package static let event = "waiting"
        /// `daemon`, `invitation`, `stream` or `answer`.
        package var `for`: String
        package var service: String
        package var reason: String
        /// `answer`: the device whose person decides.
        package var peer: PeerRef?
        /// `answer`: how long we wait at most.
        package var seconds: Double?

        package init(for what: String, service: String, reason: String, peer: PeerRef? = nil, seconds: Double? = nil) {
            self.for = what
            self.service = service
            self.reason = reason
            self.peer = peer
            self.seconds = seconds
        }
    }
}
