import Foundation
import NearbyCore
import NearbyBase

/// A failure a running node already reported for this command (its `error` event is printed): the
/// command ends with the node's exit status and the same one sentence on stderr as when it runs
/// without a node — `reporting` prints it, and prints no second event.
struct ReportedFailure: Error, Equatable {
    let status: Int32
    let message: String
}

/// The node's reply lines for one request, printed as they come; remembers the last `error` event,
/// whose message is the command's sentence if the request fails.
final class NodeReplies: Sendable {
    private let events: any EventSink
    private let lastError = Locked<String?>(nil)

    init(_ events: any EventSink) { self.events = events }

    func print(_ line: String) {
        events.emitLine(line)
        guard line.hasPrefix(#"{"event":"error""#) || line.contains(#""event":"error""#),
              let failure = DecodedEvent(line: line, kinds: [Events.Failure.self])?.body as? Events.Failure
        else { return }
        lastError.withLock { $0 = failure.message }
    }

    /// Nothing when the node says 0; else the failure, in the node's words.
    func outcome(_ status: Int32) throws(ReportedFailure) {
        guard status != 0 else { return }
        let summary = ExitStatus(rawValue: status)?.summary ?? "exit status \(status)"
        throw ReportedFailure(status: status, message: lastError.withLock { $0 } ?? "the node reported: \(summary)")
    }
}

extension ControlRequest {
    /// What the command is doing while the node works, for the sentence Ctrl-C ends it with
    /// ("waiting for an invitation cancelled").
    var activity: String {
        switch self {
        case let .invite(peer, _, _): "inviting \(peer)"
        case .accept(_, true, _): "waiting for an invitation to decline"
        case .accept: "waiting for an invitation"
        case let .send(peers, all, _, _), let .sendDatagram(peers, all, _, _), let .sendLines(peers, all, _, _):
            "sending to \(all ? "every peer" : peers.joined(separator: ", "))"
        case let .sendFiles(peer, files, _, _): "sending \(files.count == 1 ? files[0].relative : "\(files.count) files") to \(peer)"
        case let .disconnect(peer, all): "disconnecting from \(all ? "every peer" : peer ?? "")"
        case let .stream(peer, _, _, _, _): "the stream with \(peer)"
        case .listen: "listening for a stream"
        case let .expecting(_, request): request.activity
        }
    }
}
