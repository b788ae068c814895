extension Events {
    /// A command or node that goes on waiting, and for what: the DNS-SD daemon to come back (a node
    /// stays up and advertises again), or an invitation (`nearby accept` with none pending).
    public struct Waiting: EventBody {
        public static let event = "waiting"
        /// `daemon`, `invitation` or `stream`.
        public var `for`: String
        public var service: String
        public var reason: String
    }
}
