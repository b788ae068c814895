import NIOCore
import NIOSSL

/// How a node words what ended a connection, and an encryption mismatch.
extension Node {
    nonisolated static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NearbyError: error.errorDescription ?? "\(error)"
        case let error as ProtocolViolation: "protocol violation: \(error)"
        case let error as HandshakeFailure: "\(error)"
        case NIOSSLError.uncleanShutdown: "connection lost (closed without a goodbye)"
        case let error as NIOSSLError: "TLS failed: \(error)"
        case is ChannelError: "connection lost"
        case is CancellationError: "the node stopped"
        default: "connection lost (\(error))"
        }
    }

    nonisolated static func mismatch(ours: EncryptionPreference, theirs: EncryptionPreference?, decision: Preamble.Decision) -> NearbyError {
        let other = theirs?.rawValue ?? (decision == .refusedRequired ? "required" : "none")
        return .encryptionMismatch(ours: ours.rawValue, theirs: other)
    }
}
