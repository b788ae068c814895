import Foundation

/// The documented exit statuses of `nearby` (docs/exit-codes.md). Scripts rely on these numbers.
package enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    case failure = 1
    case peerNotFound = 2
    case declined = 3
    case timedOut = 4
    case connectionFailed = 5
    case noNode = 6
    case daemonUnavailable = 7
    case ioError = 8
    case identityCheckFailed = 9
    case nodeAlreadyRunning = 10
    case dnsUnreachable = 11
    case dnsKeyRejected = 12
    case dnsZoneRefused = 13
    /// `watch` may not capture packets: it needs root or CAP_NET_RAW.
    case captureNotPermitted = 14
    /// Interrupted by SIGINT while working (a cancelled transfer), as shells report it.
    case interrupted = 130
    /// The same status swift-argument-parser uses for usage errors.
    case usage = 64

    package var summary: String {
        switch self {
        case .success: "success"
        case .failure: "unexpected failure"
        case .peerNotFound: "peer not found"
        case .declined: "invitation declined"
        case .timedOut: "invitation timed out"
        case .connectionFailed: "connection failed or lost"
        case .noNode: "no node running"
        case .daemonUnavailable: "discovery daemon unavailable"
        case .ioError: "file or I/O error"
        case .identityCheckFailed: "identity or integrity check failed"
        case .nodeAlreadyRunning: "a node is already running"
        case .dnsUnreachable: "\(Spelling.option(.domain)): the DNS server did not answer, or none was found"
        case .dnsKeyRejected: "\(Spelling.option(.domain)): the DNS server rejected the TSIG key (BADKEY, BADSIG) or our clock (BADTIME)"
        case .dnsZoneRefused: "\(Spelling.option(.domain)): the DNS server refused updates for the zone (NOTAUTH, REFUSED)"
        case .captureNotPermitted: "capturing packets needs root or CAP_NET_RAW"
        case .interrupted: "interrupted: SIGINT or SIGTERM cut the work short"
        case .usage: "usage error: invalid arguments or input"
        }
    }
}

/// Every failure a user can meet, with a stable machine-readable `code` and an exit status.
package enum NearbyError: Error, LocalizedError, Equatable, Sendable {
    /// The most an unreliable message (one datagram, `Datagram.maxPayload`) carries: the error's
    /// sentence says "one datagram" for that limit.
    package static let unreliableMessageLimit = 1200

    case invalidServiceType(String, rule: String)
    case invalidDisplayName(String, rule: String)
    case invalidDiscoveryInfo(String, rule: String)
    case invalidArgument(String)
    case identityCorrupt(path: String, reason: String)
    case identityIO(path: String, reason: String)
    case daemonUnavailable(code: Int32)
    case discoveryFailed(operation: String, code: Int32)
    case nameConflict(requested: String, got: String)
    case listenFailed(String)
    /// `seen`: what the lookup found instead (near names, other service types), when it looked.
    case peerNotFound(String, waitedSeconds: Double, seen: PeerSearchReport? = nil)
    case peerAmbiguous(String, candidates: [String])
    case notANearbyPeer(String)
    case declined(peer: String, reason: String)
    case invitationTimedOut(peer: String, seconds: Double)
    /// `accept --timeout`: no invitation (from `from`, when given) came in time.
    case noInvitation(from: String?, seconds: Double)
    case connectionFailed(String)
    case encryptionMismatch(ours: String, theirs: String)
    case identityMismatch(expected: String, got: String)
    case keyChanged(peer: String, knownPeers: String)
    case noNode(String)
    case nodeAlreadyRunning(pid: Int32?, socket: String)
    case notConnected(String)
    case messageTooLarge(bytes: Int, limit: Int)
    case ioFailure(path: String, reason: String)
    case unsafeRunDirectory(path: String, reason: String)
    case transferFailed(path: String, code: TransferCode, reason: String)
    case cancelled(String)
    case wideArea(WideAreaFailure)
    /// `watch`: no permission to open a packet socket (no root, no CAP_NET_RAW).
    case captureNotPermitted
    /// `watch --read`: the file is not a capture watch can read.
    case badCaptureFile(path: String, reason: String)

    /// kDNSServiceErr_Refused: what Avahi's compat layer says when D-Bus denies us the daemon.
    package static let accessRefused: Int32 = -65553

    package var code: String {
        switch self {
        case .invalidServiceType: "invalid-service-type"
        case .invalidDisplayName: "invalid-name"
        case .invalidDiscoveryInfo: "invalid-info"
        case .invalidArgument: "invalid-argument"
        case .identityCorrupt: "identity-corrupt"
        case .identityIO: "identity-io"
        case .daemonUnavailable: "daemon-unavailable"
        case .discoveryFailed: "discovery-failed"
        case .nameConflict: "name-conflict"
        case .listenFailed: "listen-failed"
        case .peerNotFound: "peer-not-found"
        case .peerAmbiguous: "peer-ambiguous"
        case .notANearbyPeer: "not-a-nearby-peer"
        case .declined: "declined"
        case .invitationTimedOut: "invitation-timeout"
        case .noInvitation: "no-invitation"
        case .connectionFailed: "connection-failed"
        case .encryptionMismatch: "encryption-mismatch"
        case .identityMismatch: "identity-mismatch"
        case .keyChanged: "key-changed"
        case .noNode: "no-node"
        case .nodeAlreadyRunning: "node-running"
        case .notConnected: "not-connected"
        case .messageTooLarge: "message-too-large"
        case .ioFailure: "io-error"
        case .unsafeRunDirectory: "unsafe-run-directory"
        case let .transferFailed(_, code, _): code.description
        case .cancelled: "cancelled"
        case let .wideArea(failure): failure.code
        case .captureNotPermitted: "capture-not-permitted"
        case .badCaptureFile: "bad-capture-file"
        }
    }

    /// Why a transfer failed, for the code that decides by it (nil: not a transfer's failure).
    package var transferCode: TransferCode? {
        if case let .transferFailed(_, code, _) = self { return code }
        return nil
    }

    /// Interrupted here (Ctrl-C, the client went away): the work, or a transfer in it, was cancelled.
    package var isCancellation: Bool {
        if case .cancelled = self { return true }
        return transferCode == .cancelled
    }

    package var exitStatus: ExitStatus {
        switch self {
        case .invalidServiceType, .invalidDisplayName, .invalidDiscoveryInfo, .invalidArgument: .usage
        case .identityCorrupt: .identityCheckFailed
        case .identityIO, .listenFailed: .ioError
        case .daemonUnavailable: .daemonUnavailable
        case .discoveryFailed, .nameConflict: .failure
        case .peerNotFound: .peerNotFound
        case .peerAmbiguous: .peerNotFound
        case .notANearbyPeer, .connectionFailed, .encryptionMismatch, .notConnected: .connectionFailed
        case .declined: .declined
        case .invitationTimedOut, .noInvitation: .timedOut
        case .identityMismatch, .keyChanged: .identityCheckFailed
        case .noNode: .noNode
        case .nodeAlreadyRunning: .nodeAlreadyRunning
        case .messageTooLarge: .usage
        case .ioFailure, .unsafeRunDirectory: .ioError
        case .transferFailed(_, .integrity, _): .identityCheckFailed
        case .transferFailed(_, .ioError, _): .ioError
        case .transferFailed: .connectionFailed
        case .cancelled: .interrupted
        case let .wideArea(failure): failure.exitStatus
        case .captureNotPermitted: .captureNotPermitted
        case .badCaptureFile: .ioError
        }
    }

    package var errorDescription: String? {
        switch self {
        case let .invalidServiceType(value, rule):
            "invalid service type '\(value)': \(rule)"
        case let .invalidDisplayName(value, rule):
            "invalid display name '\(value)': \(rule)"
        case let .invalidDiscoveryInfo(value, rule):
            "invalid discovery info '\(value)': \(rule)"
        case let .invalidArgument(message):
            message
        case let .identityCorrupt(path, reason):
            "the identity file \(path) is corrupt (\(reason)); fix or move it away — nearby will not silently replace an identity"
        case let .identityIO(path, reason):
            "cannot use the identity file \(path): \(reason)"
        case .daemonUnavailable(Self.accessRefused):
            "avahi-daemon refused this user access: its D-Bus policy (\(AvahiPolicy.files())) does not allow it; check with `avahi-browse -at`, run as a user the policy allows, or allow this one"
        case .daemonUnavailable:
            "cannot reach the DNS-SD daemon: " + DaemonWords.unreachable()
        case let .discoveryFailed(operation, code):
            "DNS-SD \(operation) failed: \(DaemonWords.status(code))"
        case let .nameConflict(requested, got):
            "another service on the network already uses the name \(requested) (the daemon offered \(got)); is the same identity advertising elsewhere?"
        case let .listenFailed(sentence):
            sentence
        case let .peerNotFound(peer, seconds, seen?):
            "peer '\(peer)' was not found on \(seen.service)\(seen.places) within \(Self.format(seconds)) s; \(seen.sentences(for: peer))"
        case let .peerNotFound(peer, seconds, nil):
            "peer '\(peer)' was not found within \(Self.format(seconds)) s"
        case let .peerAmbiguous(query, candidates):
            "'\(query)' names more than one peer: \(Self.formatCandidates(candidates)); use the peer ID (or an unambiguous prefix)"
        case let .notANearbyPeer(peer):
            "\(peer) is a plain Multipeer Connectivity app, not a nearby node: nearby cannot open a session with it"
        case let .declined(peer, reason):
            // The wire's default reason is the word itself: said once, not as its own echo.
            ["declined", Events.Declined.byUs, ""].contains(reason)
                ? "\(peer) declined the invitation" : "\(peer) declined the invitation: \(reason)"
        case let .invitationTimedOut(peer, seconds):
            "\(peer) did not answer the invitation within \(Self.format(seconds)) s"
        case let .noInvitation(from, seconds):
            "no invitation\(from.map { " from \($0)" } ?? "") came within \(Self.format(seconds)) s"
        case let .connectionFailed(reason):
            reason
        case let .encryptionMismatch(ours, theirs):
            "encryption mismatch: we use \(Spelling.option(.encryption, ours)), the peer \(theirs); 'required' and 'none' refuse each other (use 'optional' on one side)"
        case let .identityMismatch(expected, got):
            "identity check failed: expected peer \(expected), but the key presented belongs to \(got)"
        case let .keyChanged(peer, knownPeers):
            "IDENTITY CHECK FAILED: \(peer) presented a different key than the one pinned in \(knownPeers); someone may be impersonating it. If the peer really has a new identity, remove its line from that file"
        case let .noNode(detail):
            "no node is running (\(detail)); start one with '\(Spelling.command(.advertise))' or '\(Spelling.command(.accept))'"
        case let .nodeAlreadyRunning(pid, socket):
            "a node is already running for this identity and service\(pid.map { " (pid \($0))" } ?? "") at \(socket). "
                + "Use it: '\(Spelling.command(.send))', '\(Spelling.command(.accept))' and the other commands go through it. "
                + "To restart it, stop it first (Ctrl-C where it runs\(pid.map { ", or 'kill -INT \($0)'" } ?? "")); "
                + "for a second node beside it, give that one another identity (NEARBY_HOME=DIR) or another \(Spelling.option(.service))"
        case let .notConnected(peer):
            "not connected to \(peer)"
        case let .messageTooLarge(bytes, limit):
            limit == Self.unreliableMessageLimit
                ? "the message is \(bytes) bytes; an unreliable message is one datagram of at most \(limit)"
                : "the message is \(bytes) bytes; the maximum is \(limit) (use send-file for more)"
        case let .ioFailure(path, reason):
            "\(path): \(reason)"
        case let .unsafeRunDirectory(path, reason):
            "refusing to use \(path) for the node's lock and control socket: \(reason); others could hijack it. Use a directory of your own with mode 700 (chmod 700, or unset XDG_RUNTIME_DIR to use $NEARBY_HOME/run)"
        case let .transferFailed(path, _, reason):
            "\(path): \(reason)"
        case let .cancelled(what):
            "\(what) cancelled"
        case let .wideArea(failure):
            failure.message
        case .captureNotPermitted:
            "watching mDNS captures packets, which needs root or the CAP_NET_RAW capability: run `sudo setcap cap_net_raw+ep \"$(command -v nearby)\"` once, or `sudo nearby watch`"
        case let .badCaptureFile(path, reason):
            "cannot read \(path) as a capture: \(reason)"
        }
    }

    private static func formatCandidates(_ candidates: [String]) -> String { candidates.joined(separator: ", ") }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
