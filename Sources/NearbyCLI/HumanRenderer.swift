import Foundation
import NearbyCore

/// Turns one event (its JSON object, as printed for programs) into a short line for a person at a
/// terminal: the time, the peer, what happened and the facts that matter. A pure function of the
/// event, so every kind is tested without a terminal; events it does not know get a generic line.
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

    /// Decodes an event line; nil when it is not a JSON object.
    static func decode(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// The lines for `event`. `service` is the node's service type, named in the commands shown to
    /// the person when it is not the default.
    func render(_ event: [String: Any], service: String? = nil) -> String {
        let e = Fields(event, timeZone: timeZone)
        let body: String
        switch e.string("event") {
        case "identity":
            body = "identity \(paint(e.peerLabel, .bold)) (\(e.peerID)), fingerprint \(e.short("fingerprint", 16)), \(e.clean("path"))"
        case "advertising":
            body = "advertising as \(paint(e.peerLabel, .bold)) (\(e.peerID)) on _\(e.clean("service"))._tcp port \(e.int("port"))"
                + e.info + " — waiting for invitations, Ctrl-C to stop"
        case "browsing":
            // A nearby service name is shown as its DNS-SD type; `browse --types` and
            // `browse --service _http._tcp` print the type itself.
            let service = e.clean("service")
            body = "browsing for \(service.hasPrefix("_") ? service : "_\(service)._tcp") in \(e.clean("domain")) — Ctrl-C to stop"
        case "found", "updated":
            body = found(e)
        case "looking":
            body = "still looking for '\(e.clean("peer"))' on \(e.clean("service"))…"
        case "waiting":
            body = paint(e.clean("reason"), .yellow)
        case "lost":
            body = paint("lost", .yellow) + " \(paint(e.peerLabel, .bold)) (\(e.peerID))"
        case "invitation":
            return invitation(e, service: service)
        case "invited":
            body = "invited \(paint(e.peerLabel, .bold)) at \(e.clean("address")), verification code "
                + paint(e.clean("verification_code"), .boldCyan) + e.unencrypted + " — waiting for an answer"
        case "accepted":
            body = paint("accepted", .green) + " the invitation from \(paint(e.peerLabel, .bold)) (by \(e.clean("by")))"
        case "declined":
            body = paint("declined", .yellow) + ": invitation \(e.clean("invitation")) with \(paint(e.peerLabel, .bold)): \(e.clean("reason"))"
        case "connecting":
            body = "connecting to " + (e.hasPeer ? paint(e.peerLabel, .bold) + " at " : "") + e.clean("address") + "…"
        case "connected":
            body = paint("connected", .green) + " to \(paint(e.peerLabel, .bold)) at \(e.clean("address")), verification code "
                + paint(e.clean("verification_code"), .boldCyan) + e.unencrypted + " (\(Self.count(e.int("peers"), "session")))"
        case "disconnected":
            body = paint("disconnected", .yellow) + " from \(paint(e.peerLabel, .bold)): \(e.clean("reason")) (\(Self.count(e.int("peers"), "session")) left)"
        case "message":
            body = "message from \(paint(e.peerLabel, .bold)): " + message(e)
        case "sent":
            body = "sent \(Format.size(e.double("bytes"))) to " + e.peers
        case "rejected":
            body = paint("rejected", .yellow) + " a connection from \(e.clean("address")): \(e.clean("reason")) (\(e.clean("code")))"
        case "suppressed":
            body = "… and \(RepeatLimiter<String>.grouped(e.int("count"))) more \(e.clean("of", limit: 40)) events (\(e.clean("code", limit: 60))) in the last \(e.int("seconds")) s"
        case "file-started", "progress", "file-sent", "file-received", "file-failed":
            body = file(e)
        case "skipped":
            body = paint("skipped", .yellow) + " \(paint(e.clean("path"), .bold)): \(e.clean("reason"))"
        case "stream-opened":
            body = "stream\(e.streamName) " + (e.string("direction") == "in" ? "from " : "to ") + paint(e.peerLabel, .bold) + " opened"
        case "stream-closed":
            body = "stream\(e.streamName) with \(paint(e.peerLabel, .bold)) closed: sent \(Format.size(e.double("sent"))), "
                + "received \(Format.size(e.double("received"))) (\(e.clean("reason")))"
        case "type", "service", "check", "summary":
            body = diagnosis(e)
        case "error":
            body = paint("error: ", .red) + e.clean("message") + " (\(e.clean("code")), exit \(e.int("exit_status")))"
        default:
            body = generic(e)
        }
        return stamp(e) + body
    }

    /// The one event a person must act on: who, what they said, the code to compare, the deadline,
    /// and the exact commands.
    private func invitation(_ e: Fields, service: String?) -> String {
        let indent = String(repeating: " ", count: 9)
        let context = e.has("context") ? ": \"" + e.clean("context", limit: 300) + "\"" : ""
        let target = Self.shellWord(e.peerName) ?? e.peerID
        let serviceOption = service.flatMap { $0 == "nearby" ? nil : " --service " + (Self.shellWord($0) ?? $0) } ?? ""
        if e.has("answered_by") {
            // Answered in the same moment (this command accepts, or a policy does): nothing to do.
            return stamp(e) + paint("invitation", .boldYellow) + " from \(paint(e.peerLabel, .bold)) (\(e.peerID))\(context), "
                + "verification code " + paint(e.clean("verification_code"), .boldCyan) + e.unencrypted
                + " — answered by \(e.clean("answered_by"))"
        }
        var lines = [
            stamp(e) + paint("invitation", .boldYellow) + " from \(paint(e.peerLabel, .bold)) (\(e.peerID))\(context)",
            indent + "verification code " + paint(e.clean("verification_code"), .boldCyan)
                + " — the inviter's screen shows the same code" + e.unencrypted,
            indent + "accept:  " + paint("nearby accept\(serviceOption) \(target)", .bold),
            indent + "decline: " + paint("nearby accept --decline\(serviceOption) \(target)", .bold),
        ]
        if let seconds = e.secondsUntil("expires") {
            lines.append(indent + "expires in \(seconds) s (at \(e.clock("expires"))), then it is declined")
        }
        return lines.joined(separator: "\n")
    }

    private func found(_ e: Fields) -> String {
        let what = e.string("event") == "updated" ? paint("updated", .cyan) + " (\(e.list("changed")))" : paint("found", .green)
        let kind = switch e.string("kind") {
        case "mpc": "an MPC app"
        case "nearby": "nearby"
        default: "not an MPC service (no display name in its TXT record)"
        }
        let where_ = location(e)
        let me = e.bool("self") ? " (this peer)" : ""
        return "\(what) \(paint(e.peerLabel, .bold)) (\(e.peerID)), \(kind)\(where_)\(e.info)\(me)"
    }

    private func message(_ e: Fields) -> String {
        if e.has("text") { return "\"" + e.clean("text", limit: 1000) + "\"" }
        return "\(Format.size(e.double("bytes"))) of binary data (--json shows it in base64)"
    }

    private func file(_ e: Fields) -> String {
        let path = paint(e.clean("path"), .bold)
        let peer = paint(e.peerLabel, .bold)
        let sending = e.string("direction") == "send"
        switch e.string("event") {
        case "file-started":
            let resumed = e.double("skipped") > 0 ? ", resuming after \(Format.size(e.double("skipped")))" : ""
            return (sending ? "sending \(path) to \(peer)" : "receiving \(path) from \(peer)") + " (\(Format.size(e.double("bytes")))\(resumed))"
        case "progress":
            let total = e.double("total")
            let percent = total > 0 ? Int(e.double("bytes") / total * 100) : 100
            return "\(path) \(percent)% of \(Format.size(total)), \(Format.size(e.double("rate")))/s"
        case "file-failed":
            let resume = e.bool("resumable") ? "; send it again to resume" : ""
            return paint("failed", .red) + " \(sending ? "sending" : "receiving") \(path) \(sending ? "to" : "from") \(peer): \(e.clean("reason")) (\(e.clean("code")))\(resume)"
        default:
            return summary(e)
        }
    }

    /// `file-sent` / `file-received`: what replaces the progress bar.
    func summary(_ event: [String: Any]) -> String {
        let e = Fields(event, timeZone: timeZone)
        return stamp(e) + summary(e)
    }

    private func summary(_ e: Fields) -> String {
        let sent = e.string("event") == "file-sent"
        let bytes = e.double("bytes")
        let moved = bytes - e.double("skipped")
        let seconds = e.double("seconds")
        let rate = seconds > 0 ? ", \(Format.size(moved / seconds))/s" : ""
        let resumed = e.double("skipped") > 0 ? " (resumed: \(Format.size(moved)) sent)" : ""
        if e.bool("already_there") {
            let who = sent ? "\(paint(e.peerLabel, .bold)) has the same \(Format.size(bytes))" : "the same \(Format.size(bytes)) as \(paint(e.peerLabel, .bold)) sent"
            return paint("already there", .green) + ": \(paint(e.clean("path"), .bold)) — \(who) (sha256 \(e.short("sha256", 12))), no second copy"
        }
        return paint(sent ? "sent" : "received", .green) + " \(paint(e.clean("path"), .bold)) \(sent ? "to" : "from") "
            + "\(paint(e.peerLabel, .bold)): \(Format.size(bytes)) in \(Format.seconds(seconds))\(rate)\(resumed), sha256 \(e.short("sha256", 12))"
    }

    private func generic(_ e: Fields) -> String {
        var parts = [e.clean("event")]
        if e.hasPeer { parts.append(paint(e.peerLabel, .bold)) }
        for key in e.object.keys.sorted() where !["event", "time", "peer"].contains(key) {
            if let value = e.scalar(key) { parts.append("\(Fields.cleaned(key))=\(value)") }
        }
        return parts.joined(separator: " ")
    }

    /// " at host:port [addresses]", as far as the event knows them.
    func location(_ e: Fields) -> String {
        var text = ""
        if let host = e.optionalString("host") { text += " at " + Fields.cleaned(host) + (e.has("port") ? ":\(e.int("port"))" : "") }
        let addresses = e.strings("addresses")
        if !addresses.isEmpty { text += " [" + addresses.prefix(3).map { Fields.cleaned($0) }.joined(separator: ", ") + (addresses.count > 3 ? ", …" : "") + "]" }
        return text
    }

    private func stamp(_ e: Fields) -> String { paint(e.clock("time"), .dim) + " " }

    enum Paint: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", cyan = "36"
        case boldCyan = "1;36", boldYellow = "1;33"
    }

    func paint(_ text: String, _ style: Paint) -> String {
        color ? "\u{1b}[\(style.rawValue)m\(text)\u{1b}[0m" : text
    }

    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// `word` quoted for a POSIX shell, or nil when it holds anything that cannot be typed back
    /// (control characters): the caller then uses the peer ID.
    static func shellWord(_ word: String?) -> String? {
        guard let word, !word.isEmpty, Fields.cleaned(word) == word else { return nil }
        let plain = word.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "-_.:@/+".unicodeScalars.contains($0) }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
