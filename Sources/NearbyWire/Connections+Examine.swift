import Foundation
import NIOCore
import NearbyBase
import NearbyIdentity

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
        /// The handshake had not ended when doctor's deadline (`--timeout`) passed: not judged.
        case unfinished
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
    /// about `instance` (when given and the peer speaks it) and waits for the answer — all of it
    /// by `deadline` (doctor's one deadline, from its start): the preamble has at most 3 s of what
    /// is left, and the connection is closed at the deadline, which ends a handshake or a wait for
    /// the answer that is still running (`unfinished`, `noAnswer`).
    package static func examine(
        host: String, port: Int, preference: EncryptionPreference, tls: SessionTLS.Contexts, identity: Identity,
        expected: PeerID?, knownPeers: KnownPeers, probe instance: String?, until deadline: ContinuousClock.Instant
    ) async -> PeerExamination {
        // The preamble's own wait is the connection's (10 s): the deadline ends it sooner.
        typealias Verdict = (ok: Bool, detail: String, frames: FrameChannel?)
        // A preamble that ended as the deadline passed: its connection is not used, so closed.
        let verdict: Verdict = await firstResult(until: deadline, discard: { late in try? await late.frames?.channel.channel.close().get() }) {
            await preambleVerdict(host: host, port: port, preference: preference, tls: tls, timeout: preambleWait(until: deadline), keep: true)
        } ?? (false, "no answer to the preamble before doctor's --timeout ran out", nil)
        var result = PeerExamination(encryption: (verdict.ok, verdict.detail))
        guard let frames = verdict.frames else { return result }
        let channel = frames.channel.channel
        let left = max(1, Int64((deadline - .now) / .milliseconds(1)))
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(left)) { channel.close(promise: nil) }
        defer { timer.cancel() }
        do {
            (result.identity, result.visibility) = try await frames.channel.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                let peer: AuthenticatedPeer
                do {
                    peer = try await Handshake.run(
                        inbound: &iterator, outbound: outbound, connection: frames, isClient: true, identity: identity,
                        displayName: identity.displayName, expected: expected, knownPeers: knownPeers)
                } catch {
                    return (ContinuousClock.now >= deadline ? .unfinished : outcome(of: error), .notAsked)
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
                return (proved, await ask(instance, inbound: &iterator, outbound: outbound, channel: channel, within: deadline - .now))
            }
        } catch {
            result.identity = ContinuousClock.now >= deadline ? .unfinished : outcome(of: error)
        }
        return result
    }

    /// How long the preamble may wait for its answer: 3 s at most, and never past doctor's deadline.
    static func preambleWait(until deadline: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) -> Duration {
        max(.zero, min(.seconds(3), deadline - now))
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
        let silent = "no answer within \(milliseconds) ms, when doctor's --timeout ran out"
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
            return .noAnswer(ContinuousClock.now - started >= limit ? silent : "the connection failed: \(ErrorWords.describe(error))")
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
            return .failed("the handshake failed: \(ErrorWords.describe(error))", .connectionFailed)
        }
    }
}
