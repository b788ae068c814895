import NIOCore
import NIOPosix
import NearbyBase

/// What `nearby doctor` asks of a peer's port: can a TCP connection be made at all, and does the
/// preamble agree on encryption (the handshake and probe that follow are in Connections+Examine).
extension Connections {
    /// Why a TCP connection could not be made: the words for the user, and whether it was the
    /// timeout that ended the attempt (the caller may have shortened it to fit its own deadline).
    package struct Unreachable: Sendable {
        package let reason: String
        package let timedOut: Bool
        /// Nothing listens on that port there (ECONNREFUSED): not a firewall that drops.
        package var refused = false
        /// No host answered for that address (EHOSTUNREACH): nothing to blame a firewall for.
        package var noHost = false
    }

    /// nil when a TCP connection to `host:port` was made (and closed at once), else why not.
    package static func reachable(host: String, port: Int, timeout: Duration) async -> Unreachable? {
        let milliseconds = max(1, Int64(timeout / .milliseconds(1)))
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(milliseconds))
                .connect(host: host, port: port).get()
            try? await channel.close().get()
            return nil
        } catch let error as ChannelError {
            if case .connectTimeout = error { return Unreachable(reason: "no answer in \(milliseconds) ms", timedOut: true) }
            return Unreachable(reason: ConnectFailure.describe(error, timeout: .milliseconds(milliseconds)) ?? "could not connect", timedOut: false)
        } catch {
            // In the words `send` uses for the same failure ("refused the connection (nothing
            // listens on that port)"), never NIO's.
            let reason = ConnectFailure.describe(error, timeout: .milliseconds(milliseconds)) ?? "could not connect"
            return Unreachable(reason: reason, timedOut: false, refused: ConnectFailure.isRefusal(error), noHost: ConnectFailure.isNoHost(error))
        }
    }

    /// What the preamble says: whether both sides agree, in the words of the `encryption` check.
    /// With `keep`, an agreed connection is handed back (`frames`) for the handshake; else it is
    /// closed at once.
    package static func preambleVerdict(
        host: String, port: Int, preference: EncryptionPreference, tls: SessionTLS.Contexts, timeout: Duration, keep: Bool = false
    ) async -> (ok: Bool, detail: String, frames: FrameChannel?) {
        let milliseconds = max(1, Int64(timeout / .milliseconds(1)))
        do {
            let negotiated = try await connect(
                host: host, port: port, preference: preference, tls: tls.client, timeout: .milliseconds(milliseconds))
            switch negotiated {
            case let .frames(frames):
                if !keep { try? await frames.channel.channel.close().get() }
                return (true, "nearby preamble agreed: \(frames.encrypted ? "TLS 1.3" : "plaintext") (ours: \(preference.rawValue))", keep ? frames : nil)
            case let .refused(_, theirs, decision):
                let their = theirs.map(\.rawValue) ?? (decision == .refusedNone ? "none" : "required")
                return (false, "encryption mismatch: we use '\(preference.rawValue)', the peer '\(their)'; required and none refuse each other", nil)
            case let .foreign(_, what):
                return (false, "not a nearby node: \(what)", nil)
            case .silent:
                return (false, "not a nearby node: it closed the connection without a word", nil)
            }
        } catch {
            return (false, "the preamble failed: \(ErrorWords.describe(error))", nil)
        }
    }
}
