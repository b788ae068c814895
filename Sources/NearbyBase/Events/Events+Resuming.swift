import Foundation

/// What a sending command says while it gets a transfer's link back (`Resumer`).
extension Events {
    /// The link carrying a transfer went (or an attempt to get it back failed): attempt `attempt`
    /// of this outage starts after `after` seconds. `seconds`: how long the outage has lasted so far;
    /// `retryFor`: how long it may last before the transfer fails.
    package struct Reconnecting: EventBody {
        package static let event = "reconnecting"
        package var peer: PeerRef
        package var path: String
        package var attempt: Int
        package var after: Double
        package var seconds: Double
        package var retryFor: Double
        package var reason: String

        package init(peer: PeerRef, path: String, attempt: Int, after: Double, seconds: Double, retryFor: Double, reason: String) {
            self.peer = peer
            self.path = path
            self.attempt = attempt
            self.after = after
            self.seconds = seconds
            self.retryFor = retryFor
            self.reason = reason
        }

        enum CodingKeys: String, CodingKey {
            case peer, path, attempt, after, seconds, reason
            case retryFor = "retry_for"
        }
    }

    /// The peer was reached again and the file goes on from `offset`: the prefix the receiver kept
    /// and we checked (0 when it kept nothing). `attempts` it took, `seconds` the outage lasted.
    package struct Resumed: EventBody {
        package static let event = "resumed"
        package var transfer: String
        package var peer: PeerRef
        package var path: String
        package var offset: UInt64
        package var bytes: UInt64
        package var attempts: Int
        package var seconds: Double

        package init(transfer: String, peer: PeerRef, path: String, offset: UInt64, bytes: UInt64, attempts: Int, seconds: Double) {
            self.transfer = transfer
            self.peer = peer
            self.path = path
            self.offset = offset
            self.bytes = bytes
            self.attempts = attempts
            self.seconds = seconds
        }
    }
}
