import Foundation
import NIOCore

/// What `nearby doctor PEER` learns from one connection to the peer: whether the preamble agrees on
/// encryption, whether the handshake proves the identity it advertised, and whether the peer sees
/// this host's DNS-SD probe. The connection never becomes a session: no invitation is sent, nothing
/// is pinned, and the peer's user sees no event.
package struct PeerExamination: Sendable {
    package enum Identity: Sendable {
        /// Not run: the preamble did not lead to frames.
        case notRun
        /// The peer proved the key of the ID it advertised; `pin` says what known_peers holds.
        case proved(AuthenticatedPeer, pin: KnownPeers.Verdict)
        /// known_peers holds another key for this ID.
        case keyChanged(peer: String, knownPeers: String)
        case failed(String, ExitStatus)
    }

    package enum Visibility: Sendable {
        /// Not asked: no handshake.
        case notAsked
        /// Not asked: this host has no probe published to ask about.
        case noProbe
        /// The peer's hello does not list `probe`: an older node.
        case unsupported
        case answered(FrameBody.ProbeReply)
        case noAnswer(String)
    }

    /// The preamble: agreed, and what it says.
    package var encryption: (ok: Bool, detail: String)
    package var identity = Identity.notRun
    package var visibility = Visibility.notAsked
}

extension Connections {
    /// Connects, runs the preamble, the handshake as a client with `identity`, then asks the probe
    /// about `instance` (when given and the peer speaks it) and waits `replyWithin` for the answer.
    package static func examine(
        host: String, port: Int, preference: EncryptionPreference, tls: SessionTLS.Contexts, identity: Identity,
        expected: PeerID?, knownPeers: KnownPeers, probe instance: String?, replyWithin: Duration
    ) async -> PeerExamination {
        let verdict = await preambleVerdict(host: host, port: port, preference: preference, tls: tls, timeout: .seconds(3), keep: true)
        var result = PeerExamination(encryption: (verdict.ok, verdict.detail))
        guard let frames = verdict.frames else { return result }
        do {
            (result.identity, result.visibility) = try await frames.channel.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                let peer: AuthenticatedPeer
                do {
                    peer = try await Handshake.run(
                        inbound: &iterator, outbound: outbound, connection: frames, isClient: true, identity: identity,
                        displayName: identity.displayName, expected: expected, knownPeers: knownPeers)
                } catch {
                    return (outcome(of: error), .notAsked)
                }
                let pin = (try? knownPeers.verify(id: peer.id, key: peer.key)) ?? .new
                let proved = PeerExamination.Identity.proved(peer, pin: pin)
                let goodbye = FrameBody.frame(.goodbye, FrameBody.Goodbye(reason: "nearby doctor is done"))
                guard let instance else {
                    try? await outbound.write(goodbye)
                    return (proved, .noProbe)
                }
                guard peer.features.contains(FrameBody.probeFeature) else {
                    try? await outbound.write(goodbye)
                    return (proved, .unsupported)
                }
                let channel = frames.channel.channel
                return (proved, await ask(instance, inbound: &iterator, outbound: outbound, channel: channel, within: replyWithin))
            }
        } catch {
            result.identity = outcome(of: error)
        }
        return result
    }

    /// Sends the probe and reads until its answer, answering pings, for at most `limit`.
    static func ask(
        _ instance: String, inbound: inout NIOAsyncChannelInboundStream<Frame>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<Frame>, channel: any Channel, within limit: Duration
    ) async -> PeerExamination.Visibility {
        let started = ContinuousClock.now
        let milliseconds = max(1, Int64(limit / .milliseconds(1)))
        // Closing the channel at the deadline ends the inbound stream below.
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) { channel.close(promise: nil) }
        defer { timer.cancel() }
        let silent = "no answer within \(milliseconds) ms"
        do {
            try await outbound.write(FrameBody.frame(.probe, FrameBody.Probe(instance: instance)))
            while let message = try await inbound.nextMessage() {
                switch message {
                case let .probeReply(reply):
                    return .answered(reply.bounded)
                case .ping:
                    try await outbound.write(Frame(kind: .pong))
                case .pong:
                    continue
                case let .goodbye(goodbye):
                    return .noAnswer("the peer left without answering: \(String(goodbye.reason.prefix(FrameBody.maxReasonBytes)))")
                default:
                    return .noAnswer("the peer sent a \(message.kind) frame instead of an answer")
                }
            }
            return .noAnswer(ContinuousClock.now - started >= limit ? silent : "the peer closed the connection without answering")
        } catch let violation as ProtocolViolation {
            // A frame that does not decode (a malformed answer): doctor has no link of a node to
            // cut, so it reports what the peer did.
            return .noAnswer("the peer broke the protocol: \(violation)")
        } catch {
            return .noAnswer(ContinuousClock.now - started >= limit ? silent : "the connection failed: \(error)")
        }
    }

    static func outcome(of error: any Error) -> PeerExamination.Identity {
        switch error {
        case let NearbyError.keyChanged(peer, knownPeers):
            return .keyChanged(peer: peer, knownPeers: knownPeers)
        case let error as NearbyError:
            return .failed(error.errorDescription ?? "\(error)", error.exitStatus)
        case HandshakeFailure.closed:
            return .failed("the peer closed the connection during the handshake (it may pin another key for this host's ID)", .connectionFailed)
        case let error as HandshakeFailure:
            return .failed("\(error)", .connectionFailed)
        case let error as ProtocolViolation:
            return .failed("the peer broke the protocol: \(error)", .connectionFailed)
        default:
            return .failed("the handshake failed: \(error)", .connectionFailed)
        }
    }
}
