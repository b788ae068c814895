extension Events {
    /// A command or node that goes on waiting, and for what: the DNS-SD daemon to come back (a node
    /// stays up and advertises again), or an invitation (`nearby accept` with none pending).
    package struct Waiting: EventBody {
        package static let event = "waiting"
        /// `daemon`, `invitation` or `stream`.
        package var `for`: String
        package var service: String
        package var reason: String

        package init(for what: String, service: String, reason: String) {
            self.for = what
            self.service = service
            self.reason = reason
        }
    }
}
