import NIOCore
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        // The system's words ("Connection reset by peer"), not NIO's call and errno.
        case let error as IOError: "connection lost (\(String(cString: strerror(error.errnoCode))))"
        case is CancellationError: "the node stopped"
        default: "connection lost (\(error))"
        }
    }

    nonisolated static func mismatch(ours: EncryptionPreference, theirs: EncryptionPreference?, decision: Preamble.Decision) -> NearbyError {
        let other = theirs?.rawValue ?? (decision == .refusedRequired ? "required" : "none")
        return .encryptionMismatch(ours: ours.rawValue, theirs: other)
    }
}
