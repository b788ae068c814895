import Foundation

/// What a sending command says while it gets a transfer's link back (`ResumingTransfer`).
extension Events {
    /// The link carrying a transfer went (or an attempt to get it back failed): attempt `attempt`
    /// of this outage starts after `after` seconds. `seconds`: how long the outage has lasted so far;
    /// `retryFor`: how long it may last before the transfer fails.
    public struct Reconnecting: EventBody {
        public static let event = "reconnecting"
        public var peer: PeerRef
        public var path: String
        public var attempt: Int
        public var after: Double
        public var seconds: Double
        public var retryFor: Double
        public var reason: String

        enum CodingKeys: String, CodingKey {
            case peer, path, attempt, after, seconds, reason
            case retryFor = "retry_for"
        }
    }

    /// The peer was reached again and the file goes on from `offset`: the prefix the receiver kept
    /// and we checked (0 when it kept nothing). `attempts` it took, `seconds` the outage lasted.
    public struct Resumed: EventBody {
        public static let event = "resumed"
        public var transfer: String
        public var peer: PeerRef
        public var path: String
        public var offset: UInt64
        public var bytes: UInt64
        public var attempts: Int
        public var seconds: Double
    }
}
