import Foundation
import NearbyCore
import NearbyWeb
import NearbyLocalSend
import NearbyBase
import NearbyWatch

/// Turns one typed event into a short line for a person at a terminal: the time, the peer, what
/// happened and the facts that matter. A pure function of the event, so every kind is tested
/// without a terminal; a kind this version does not know (or a line it cannot read as its kind)
/// gets a generic line of its fields.
///
/// Everything a peer sent (names, context, messages, file names) is shown with its control
/// characters escaped: nothing from the network can move the cursor or recolour the screen.
struct HumanRenderer: Sendable {
    /// ANSI colours and bold (only on a terminal that allows escapes).
    var color = false
    /// The time zone the times are shown in.
    var timeZone = TimeZone.current
    /// The terminal's width, when the lines go to one: long texts (doctor's details and hints)
    /// are wrapped to it between words. nil: one line each, however long.
    var columns: Int?

    /// The kinds a line can be read as: the core's and the commands' own.
    static let kinds: [any EventBody.Type] = Events.kinds + [Events.BrowseDomainSeen.self] + Events.webKinds + Events.localSendKinds
        + [Events.Watching.self, Events.Packet.self, Events.Finding.self, Events.WatchSampling.self]

    /// Reads an event line; nil when it is not a JSON object with an `event`.
    static func decode(_ line: String) -> DecodedEvent? { DecodedEvent(line: line, kinds: kinds) }

    /// The lines for `event`. `service` is the node's service type, named in the commands shown to
    /// the person when it is not the default.
    func render(_ event: DecodedEvent, service: String? = nil) -> String {
        let stamp = paint(clock(event.time), .dim) + " "
        if let invited = event.body as? Events.Invitation { return invitation(invited, at: event.time, service: service) }
        return stamp + (event.body.flatMap(line) ?? generic(event))
    }

    /// The line of a known kind; nil for the few shown generically.
    private func line(_ body: any EventBody) -> String? {
        switch body {
        case let e as Events.IdentityShown:
            return "identity \(bold(e.peer)) (\(Text.id(e.peer))), fingerprint \(Text.short(e.fingerprint, 16)), \(Text.clean(e.path))"
        case let e as Events.Advertising:
            return "advertising as \(bold(e.peer)) (\(Text.id(e.peer))) on _\(Text.clean(e.service))._tcp port \(e.port)"
                + Text.info(e.info) + " — waiting for invitations" + (e.stopsAfter == nil ? ", " : " ") + WaitEnds.words(e.stopsAfter)
        case let e as Events.WebServing:
            let what = e.mode == "send" ? "a download page (\(e.items ?? 0) item\(e.items == 1 ? "" : "s"))" : "an upload page"
            return "serving \(what) at " + paint(Text.clean(e.url), .bold) + (e.urls.count > 1 ? " (and \(e.urls.count - 1) more address\(e.urls.count == 2 ? "" : "es"))" : "")
        case let e as Events.WebDownload:
            let how = e.complete ? paint("downloaded", .green) : paint("download cut short", .yellow)
            let amount = e.bytes == e.total ? Format.size(Double(e.total)) : "\(Format.size(Double(e.bytes))) of \(Format.size(Double(e.total)))"
            return "\(how) \(Text.clean(e.path)) by \(Text.clean(e.address)): \(amount)"
                + (e.offset > 0 ? " from byte \(e.offset)" : "") + (e.allDone ? " — every file downloaded" : "")
        case let e as Events.Browsing:
            // A nearby service name is shown as its DNS-SD type; `browse --types` and
            // `browse --service _http._tcp` print the type itself.
            let ends = e.now == true ? "listing what answers now" : WaitEnds.words(e.stopsAfter)
            return "browsing for \(e.service.hasPrefix("_") ? Text.clean(e.service) : "_\(Text.clean(e.service))._tcp") in \(Text.clean(e.domain)) — \(ends)"
        case let e as Events.PeerSeen: return found(e, changed: nil)
        case let e as Events.PeerUpdated: return found(e.seen, changed: e.changed)
        case let e as Events.Looking:
            let more = e.remaining.map { " for \(Int($0.rounded())) s more" } ?? ""
            let near = (e.near ?? []).prefix(5).map { "\(bold($0)) (\(Text.id($0)))" }
            return "still looking for '\(Text.clean(e.peer))' on \(Text.clean(e.service))\(more)"
                + (near.isEmpty ? "…" : "; near: " + near.joined(separator: ", "))
        case let e as Events.Waiting: return paint(Text.clean(e.reason), .yellow)
        case let e as Events.Lost: return paint("lost", .yellow) + " \(bold(e.peer)) (\(Text.id(e.peer)))"
        case let e as Events.Invited:
            return "invited \(bold(e.peer)) at \(Text.clean(e.address)), verification code " + paint(Text.clean(e.verificationCode), .boldCyan)
                + Text.unencrypted(e.encrypted) + " — waiting for an answer"
        case let e as Events.Accepted: return paint("accepted", .green) + " the invitation from \(bold(e.peer)) (by \(Text.clean(e.by)))"
        case let e as Events.Declined:
            if e.reason == Events.Declined.byUs { return paint("declined", .yellow) + " the invitation \(Text.clean(e.invitation)) from \(bold(e.peer))" }
            if e.reason == "declined" { return "\(bold(e.peer)) " + paint("declined", .yellow) + " the invitation \(Text.clean(e.invitation))" }
            return paint("declined", .yellow) + ": invitation \(Text.clean(e.invitation)) with \(bold(e.peer)): \(Text.clean(e.reason))"
        case let e as Events.Connecting:
            return "connecting to " + (e.peer.map { bold($0) + " at " } ?? "") + Text.clean(e.address) + "…"
        case let e as Events.Connected:
            return paint("connected", .green) + " to \(bold(e.peer)) at \(Text.clean(e.address)), verification code "
                + paint(Text.clean(e.verificationCode), .boldCyan) + Text.unencrypted(e.encrypted) + " (\(Self.count(e.peers, "session")))"
        case let e as Events.Disconnected:
            return paint("disconnected", .yellow) + " from \(bold(e.peer)): \(Text.clean(e.reason)) (\(Self.count(e.peers, "session")) left)"
        case let e as Events.Message:
            return "message from \(bold(e.peer)): "
                + (e.text.map { "\"" + Text.clean($0, limit: 1000) + "\"" } ?? "\(Format.size(Double(e.bytes))) of binary data (--json shows it in base64)")
        case let e as Events.Sent: return "sent \(Format.size(Double(e.bytes))) to " + Text.peers(e.peers)
        case let e as Events.Rejected:
            return paint("rejected", .yellow) + " a connection from \(Text.clean(e.address)): \(Text.clean(e.reason)) (\(Text.clean(e.code)))"
        case let e as Events.Suppressed:
            return "… and \(RepeatLimiter<String>.grouped(e.count)) more \(Text.clean(e.of, limit: 40)) event\(e.count == 1 ? "" : "s") (\(Text.clean(e.code, limit: 60)))"
                + (e.peer.map { " of \(bold($0))" } ?? "") + " in the last \(e.seconds) s"
        case let e as Events.FileStarted:
            let resumed = e.skipped > 0 ? ", resuming after \(Format.size(Double(e.skipped)))" : ""
            let path = paint(Text.clean(e.path), .bold)
            return (e.direction == "send" ? "sending \(path) to \(bold(e.peer))" : "receiving \(path) from \(bold(e.peer))")
                + (e.sizeKnown == false ? "" : " (\(Format.size(Double(e.bytes)))\(resumed))")
        case let e as Events.Progress:
            // A total of 0 with bytes moving: the size is not known ahead (a browser's upload).
            guard e.total > 0 || e.bytes == 0 else {
                return "\(paint(Text.clean(e.path), .bold)) \(Format.size(Double(e.bytes))) so far, \(Format.size(e.rate))/s"
            }
            let percent = e.total > 0 ? Int(Double(e.bytes) / Double(e.total) * 100) : 100
            return "\(paint(Text.clean(e.path), .bold)) \(percent)% of \(Format.size(Double(e.total))), \(Format.size(e.rate))/s"
        case let e as Events.FileSent: return done(e)
        case let e as Events.FileReceived: return done(e)
        case let e as Events.FileFailed:
            let sending = e.direction == "send"
            let resume = e.resumable ? "; send it again to resume" : ""
            return paint("failed", .red) + " \(sending ? "sending" : "receiving") \(paint(Text.clean(e.path), .bold)) \(sending ? "to" : "from") "
                + "\(bold(e.peer)): \(Text.clean(e.reason)) (\(Text.clean(e.code)))\(resume)"
        case let e as Events.Reconnecting:
            return paint("reconnecting", .yellow) + " to \(bold(e.peer)) for \(paint(Text.clean(e.path), .bold)) (attempt \(e.attempt), "
                + "outage \(Int(e.seconds)) s of \(Int(e.retryFor)) s): \(Text.clean(e.reason, limit: 120))"
        case let e as Events.Resumed:
            return paint("resumed", .green) + " \(paint(Text.clean(e.path), .bold)) to \(bold(e.peer)) at \(Format.size(Double(e.offset))) "
                + "of \(Format.size(Double(e.bytes))) after \(Self.count(e.attempts, "attempt")) (\(String(format: "%.1f", e.seconds)) s)"
        case let e as Events.Skipped: return paint("skipped", .yellow) + " \(paint(Text.clean(e.path), .bold)): \(Text.clean(e.reason))"
        case let e as Events.StreamOpened:
            return "stream\(Text.streamName(e.name)) " + (e.direction == "in" ? "from " : "to ") + bold(e.peer) + " opened"
        case let e as Events.StreamClosed:
            return "stream\(Text.streamName(e.name)) with \(bold(e.peer)) closed: sent \(Format.size(Double(e.sent))), "
                + "received \(Format.size(Double(e.received))) (\(Text.clean(e.reason)))"
        case let e as Events.Failure:
            // Never cut (the end is often the hint to act on): wrapped between words on a
            // terminal, under the time; bounded only as doctor's details are, for a peer's words in it.
            let sentence = Text.clean(e.message, limit: Self.longest) + " (\(Text.clean(e.code, limit: 60)), exit \(e.exitStatus))"
            return paint("error: ", .red) + Self.wrapped(sentence, first: 9 + 7, indent: 9, columns: columns)
        default:
            return diagnosis(body)
        }
    }

    /// The one event a person must act on: who, what they said, the code to compare, the deadline,
    /// and the exact commands.
    private func invitation(_ e: Events.Invitation, at time: Date?, service: String?) -> String {
        let stamp = paint(clock(time), .dim) + " "
        let indent = String(repeating: " ", count: 9)
        let context = e.context.map { ": \"" + Text.clean($0, limit: 300) + "\"" } ?? ""
        let target = Self.shellWord(e.peer.name) ?? Text.id(e.peer)
        let localSend = e.kind == "localsend"
        // The commands work as printed: a LocalSend transfer is answered by `accept --localsend`
        // (its node is no DNS-SD service that `--service` could name).
        let serviceOption = localSend
            ? " --localsend" : service.flatMap { $0 == "nearby" ? nil : " --service " + (Self.shellWord($0) ?? $0) } ?? ""
        // LocalSend has no verification code: say so rather than show an empty one.
        let code = localSend ? "LocalSend (no verification code)" : "verification code " + paint(Text.clean(e.verificationCode), .boldCyan)
        let offered = e.offer.map { " — offers " + Self.offered($0) } ?? ""
        let from = paint("invitation", .boldYellow) + " from \(bold(e.peer)) (\(Text.id(e.peer)))\(context)\(offered)"
        if let by = e.answeredBy {
            // Answered in the same moment (this command accepts, or a policy does): nothing to do.
            return stamp + from + ", " + code + Text.unencrypted(e.encrypted) + " — answered by \(Text.clean(by))"
        }
        var lines = [
            stamp + from,
            indent + code + (localSend ? "" : " — the inviter's screen shows the same code") + Text.unencrypted(e.encrypted),
            indent + "accept:  " + paint("nearby accept\(serviceOption) \(target)", .bold),
            indent + "decline: " + paint("nearby accept --decline\(serviceOption) \(target)", .bold),
        ]
        if let expires = DecodedEvent.date(e.expires), let time {
            let seconds = max(0, Int(expires.timeIntervalSince(time).rounded()))
            lines.append(indent + "expires in \(seconds) s (at \(clock(expires))), then it is declined")
        }
        return lines.joined(separator: "\n")
    }

    private func found(_ e: Events.PeerSeen, changed: [String]?) -> String {
        let what = changed.map { paint("updated", .cyan) + " (\(Text.list($0)))" } ?? paint("found", .green)
        let kind = switch e.kind {
        case .mpc: "an MPC app"
        case .nearby: "nearby"
        case .other: "not an MPC service (no display name in its TXT record)"
        case .localsend: "LocalSend"
        }
        let me = e.isSelf ? " (this peer)" : ""
        return "\(what) \(bold(e.peer)) (\(Text.id(e.peer))), \(kind)"
            + Text.location(host: e.host, port: e.port, addresses: e.addresses) + Text.info(e.info) + me
    }

    /// `file-sent` / `file-received`, with the time: what replaces the progress bar.
    func summary(_ event: DecodedEvent) -> String? {
        let text: String? = switch event.body {
        case let e as Events.FileSent: done(e)
        case let e as Events.FileReceived: done(e)
        default: nil
        }
        return text.map { paint(clock(event.time), .dim) + " " + $0 }
    }

    private func done<End>(_ e: Events.FileDone<End>) -> String {
        let sent = End.self == Events.SendingEnd.self
        let bytes = Double(e.bytes), moved = Double(e.bytes) - Double(e.skipped)
        // The time and the rate are of what moved this time: a resumed file says so, and how much was there before.
        let rate = e.seconds > 0 ? ", \(Format.size(moved / e.seconds))/s" : ""
        let size = e.skipped > 0
            ? "\(Format.size(bytes)), resumed after \(Format.size(Double(e.skipped))): \(Format.size(moved)) \(sent ? "sent" : "received")"
            : Format.size(bytes)
        let path = paint(Text.clean(e.path), .bold)
        if e.alreadyThere == true {
            let who = sent ? "\(bold(e.peer)) has the same \(Format.size(bytes))" : "the same \(Format.size(bytes)) as \(bold(e.peer)) sent"
            let nothing = e.skipped == e.bytes ? ", nothing sent" : ", no second copy"
            return paint("already there", .green) + "\(nothing): \(path) — \(who) (sha256 \(Text.short(e.sha256, 12)))"
        }
        let renamed = e.savedAs.map { " (saved there as \(paint(Text.clean($0), .bold)))" } ?? ""
        return paint(sent ? "sent" : "received", .green) + " \(path)\(renamed) \(sent ? "to" : "from") "
            + "\(bold(e.peer)): \(size) in \(Format.seconds(e.seconds))\(rate), sha256 \(Text.short(e.sha256, 12))"
    }

    /// The kind and its plain fields: for kinds without words of their own, and lines this version
    /// cannot read.
    private func generic(_ event: DecodedEvent) -> String {
        let fields = event.allFields
        var parts = [Text.clean(event.kind)]
        if case let .object(peer)? = fields["peer"], let shown = (peer["name"] ?? peer["id"])?.scalar {
            parts.append(paint(Text.clean(shown, limit: 63), .bold))
        }
        for key in fields.keys.sorted() where key != "peer" {
            if let value = fields[key]?.scalar { parts.append("\(Text.clean(key))=\(Text.clean(value, limit: 80))") }
        }
        return parts.joined(separator: " ")
    }

    /// The time as a wall clock (`21:20:23`) in `timeZone`.
    func clock(_ date: Date?) -> String {
        guard let date else { return "--:--:--" }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute, .second], from: date)
        return String(format: "%02d:%02d:%02d", parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }

    enum Paint: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", cyan = "36"
        case boldCyan = "1;36", boldYellow = "1;33"
    }

    func paint(_ text: String, _ style: Paint) -> String {
        color ? "\u{1b}[\(style.rawValue)m\(text)\u{1b}[0m" : text
    }

    /// The peer's display name (else its ID), bold.
    func bold(_ peer: PeerRef) -> String { paint(Text.label(peer), .bold) }

    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// `word` quoted for a POSIX shell, or nil when it holds anything that cannot be typed back
    /// (control characters): the caller then uses the peer ID.
    static func shellWord(_ word: String?) -> String? {
        guard let word, !word.isEmpty, Text.clean(word, limit: .max) == word else { return nil }
        let plain = word.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "-_.:@/+".unicodeScalars.contains($0) }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
