import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyBase

@Suite struct HumanRendererTests {
    private let renderer = HumanRenderer(color: false, timeZone: TimeZone(identifier: "UTC") ?? .current)
    private let vm = PeerRef(id: "3hx5hctom3pdm", name: "vm")
    private let peer = #""peer":{"id":"3hx5hctom3pdm","name":"vm"}"#
    private let time = #""time":"2026-11-21T21:20:23.123Z""#
    private let at = Date(timeIntervalSince1970: 1_795_296_023.123)

    /// A hand-written line, as a node of this or another version could send it.
    private func line(_ event: String, _ fields: String) -> String {
        guard let decoded = HumanRenderer.decode(#"{"event":"\#(event)",\#(time),\#(fields)}"#) else { return "undecodable" }
        return renderer.render(decoded)
    }

    /// Our own event, through the line it is printed as and back: what a client of a node shows.
    private func shown(_ body: some EventBody) -> String {
        guard let decoded = HumanRenderer.decode(EventEncoder().line(body, at: at)) else { return "undecodable" }
        #expect(decoded.body != nil, "\(type(of: body).event) did not decode as itself")
        return renderer.render(decoded)
    }

    private func seen(kind: PeerKind, host: String?, port: Int?, addresses: [String], info: [String: String], isSelf: Bool) -> Events.PeerSeen {
        Events.PeerSeen(peer: vm, service: "nearby", kind: kind, protocolVersion: "1", info: info, host: host, port: port,
                        addresses: addresses, interface: nil, isSelf: isSelf, elapsedMs: 3)
    }

    @Test func everyKindIsOneReadableLineWithItsFacts() {
        let b = PeerRef(id: "b", name: nil)
        let cases: [(any EventBody, [String])] = [
            (Events.IdentityShown(peer: vm, fingerprint: "0123456789abcdef0123", path: "/h/identity.json", created: "x"),
             ["identity vm (3hx5hctom3pdm)", "0123456789abcdef…", "/h/identity.json"]),
            (Events.Advertising(peer: vm, service: "chat", domain: "local.", port: 39339, info: ["room": "4.12"]),
             ["advertising as vm", "_chat._tcp port 39339", "{room=4.12}", "Ctrl-C"]),
            (Events.Browsing(service: "nearby", domain: "local."), ["browsing for _nearby._tcp in local."]),
            (seen(kind: .nearby, host: "h2.local.", port: 4000, addresses: ["10.99.0.2"], info: [:], isSelf: false),
             ["found vm (3hx5hctom3pdm), nearby at h2.local.:4000 [10.99.0.2]"]),
            (seen(kind: .mpc, host: nil, port: nil, addresses: [], info: [:], isSelf: true), ["an MPC app", "(this peer)"]),
            (Events.PeerUpdated(changed: ["info", "port"], seen: seen(kind: .nearby, host: nil, port: nil, addresses: [], info: ["k": "v"], isSelf: false)),
             ["updated (info, port) vm", "{k=v}"]),
            (Events.Lost(peer: vm, service: "nearby", elapsedMs: 1), ["lost vm (3hx5hctom3pdm)"]),
            (Events.Invited(invitation: "i1", peer: vm, address: "10.99.0.2:4000", verificationCode: "307 961", encrypted: true),
             ["invited vm at 10.99.0.2:4000, verification code 307 961", "waiting for an answer"]),
            (Events.Accepted(invitation: "i1", peer: vm, by: "nearby accept"), ["accepted the invitation from vm (by nearby accept)"]),
            (Events.Declined(invitation: "i1", peer: vm, reason: "expired: not answered in time"), ["declined", "expired: not answered in time"]),
            (Events.Connecting(peer: nil, address: "10.99.0.2:4000"), ["connecting to 10.99.0.2:4000"]),
            (Events.Connected(peer: vm, address: "10.99.0.2:4000", verificationCode: "307 961", encrypted: false, peers: 1),
             ["connected to vm", "verification code 307 961", "NOT encrypted", "(1 session)"]),
            (Events.Disconnected(peer: vm, reason: "peer left: disconnected", peers: 0), ["disconnected from vm: peer left: disconnected (0 sessions left)"]),
            (Events.Message(peer: vm, text: "hello", data: nil, bytes: 5), [#"message from vm: "hello""#]),
            (Events.Message(peer: vm, text: nil, data: "AAE=", bytes: 2), ["2 B of binary data"]),
            (Events.Sent(peers: [vm, b], bytes: 2048), ["sent 2.0 KiB to vm, b"]),
            (Events.Rejected(address: "10.0.0.9:1", reason: "not nearby", code: "not-a-nearby-peer"), ["rejected a connection from 10.0.0.9:1", "not-a-nearby-peer"]),
            (Events.FileStarted(transfer: "t", direction: "send", peer: vm, path: "photo.jpg", bytes: 20_971_520, skipped: 0),
             ["sending photo.jpg to vm (20.0 MiB)"]),
            (Events.FileStarted(transfer: "t", direction: "receive", peer: vm, path: "a.bin", bytes: 2048, skipped: 1024),
             ["receiving a.bin from vm (2.0 KiB, resuming after 1.0 KiB)"]),
            (Events.FileSent(transfer: "t", peer: vm, path: "photo.jpg", bytes: 20_971_520, skipped: 0, sha256: "3f2a9c1b00112233445566", seconds: 0.5),
             ["sent photo.jpg to vm: 20.0 MiB in 0.50 s, 40.0 MiB/s, sha256 3f2a9c1b0011…"]),
            // Resumed: the time and the rate are of what moved this time, and it says how much was there.
            (Events.FileSent(transfer: "t", peer: vm, path: "big.bin", bytes: 60_000_000, skipped: 30_000_000, sha256: "3f2a9c1b00112233445566", seconds: 2),
             ["sent big.bin to vm: 57.2 MiB, resumed after 28.6 MiB: 28.6 MiB sent in 2.00 s, 14.3 MiB/s, sha256 3f2a9c1b0011…"]),
            (Events.FileReceived(transfer: "t", peer: vm, path: "/in/big.bin", bytes: 4096, skipped: 1024, sha256: "ab", seconds: 1),
             ["received /in/big.bin from vm: 4.0 KiB, resumed after 1.0 KiB: 3.0 KiB received in 1.00 s, 3.0 KiB/s, sha256 ab"]),
            (Events.FileReceived(transfer: "t", peer: vm, path: "/in/photo.jpg", bytes: 1024, skipped: 0, sha256: "ab", seconds: 0),
             ["received /in/photo.jpg from vm: 1.0 KiB in 0.00 s, sha256 ab"]),
            (Events.FileFailed(transfer: "t", direction: "send", peer: vm, path: "x", code: "connection-lost", reason: "gone", resumable: true),
             ["failed sending x to vm: gone (connection-lost); send it again to resume"]),
            (Events.StreamOpened(stream: "s1", direction: "in", peer: vm, name: "photos"), [#"stream "photos" from vm opened"#]),
            (Events.StreamClosed(stream: "s1", peer: vm, name: "", sent: 3, received: 2048, reason: "done"),
             ["stream with vm closed: sent 3 B, received 2.0 KiB (done)"]),
            (Events.Failure(code: "peer-not-found", message: "no peer bob", exitStatus: 2), ["error: no peer bob (peer-not-found, exit 2)"]),
            (Events.NothingFound(service: "_nearby._tcp", seconds: 3, hint: "run doctor"), ["nothing-found", "hint=run doctor", "seconds=3"]),
        ]
        for (body, expected) in cases {
            let event = type(of: body).event
            let text = shown(body)
            #expect(text.hasPrefix("21:20:23 "), "\(event): \(text)")
            #expect(!text.contains("{\"") && !text.contains("\u{1b}"), "\(event): \(text)")
            for piece in expected { #expect(text.contains(piece), "\(event): \(text) lacks \(piece)") }
            #expect(!text.contains("\n"), "\(event): \(text)")
        }
    }

    /// A newer node's kind, or an older node's line without a field this version reads: the
    /// kind and its plain fields, never nothing.
    @Test func linesThisVersionCannotReadStillShow() {
        let newer = line("brand-new", #"\#(peer),"answer":42,"nested":{"a":1}"#)
        #expect(newer == "21:20:23 brand-new vm answer=42", "\(newer)")
        let older = line("connected", #"\#(peer),"address":"10.99.0.2:4000""#)
        #expect(older == "21:20:23 connected vm address=10.99.0.2:4000", "\(older)")
        #expect(HumanRenderer.decode("[1,2]") == nil && HumanRenderer.decode(#"{"time":"x"}"#) == nil)
    }

    /// Every kind docs/events.schema.json documents is one this version reads as its type.
    @Test func everyDocumentedKindIsTyped() throws {
        let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/events.schema.json").standardizedFileURL
        let text = try String(contentsOf: schema, encoding: .utf8)
        let documented = Set(text.matches(of: /"event": \{\s*"const": "([a-z-]+)"/).map { String($0.output.1) })
        #expect(documented.count > 30, "\(documented)")
        let typed = Set(HumanRenderer.kinds.map { $0.event })
        #expect(documented.subtracting(typed).isEmpty, "documented, not typed: \(documented.subtracting(typed).sorted())")
        #expect(typed.subtracting(documented).isEmpty, "typed, not documented: \(typed.subtracting(documented).sorted())")
    }

    @Test func doctorAndRawBrowsingReadAsAChecklist() {
        let ok = line("check", #""check":"daemon","status":"ok","detail":"avahi-daemon answers","hint":null"#)
        #expect(ok.hasSuffix("ok   daemon: avahi-daemon answers"), "\(ok)")
        let failed = line("check", #""check":"peer-sees-us","status":"fail","detail":"bob does not see this host","hint":"check UDP 5353""#)
        #expect(failed.contains("FAIL peer-sees-us: bob does not see this host\n") && failed.hasSuffix("hint: check UDP 5353"), "\(failed)")
        let summary = line("summary", #""ok":5,"warn":1,"fail":1,"exit_status":2"#)
        #expect(summary.contains("doctor: 5 ok, 1 warnings, 1 failed (exit 2)"), "\(summary)")
        let type = line("type", #""type":"_http._tcp","instances":2"#)
        #expect(type.hasSuffix("_http._tcp (2 instances)"), "\(type)")
        #expect(line("type", #""type":"_ipp._tcp","instances":0"#).hasSuffix("gone _ipp._tcp"))
        let service = line("service", #""state":"found","type":"_http._tcp","name":"printer\u001b[2J","host":"p.local.","port":80,"addresses":["10.99.0.3"],"interface":"eth0","txt":{"path":"/"}"#)
        #expect(service.hasSuffix(#"found printer\u{1b}[2J (_http._tcp) at p.local.:80 [10.99.0.3] path=/"#), "\(service)")
        #expect(!service.contains("\u{1b}"), "\(service)")
    }

    @Test func anInvitationSaysWhatToDo() throws {
        var invitation = Events.Invitation(
            invitation: "fbrjmmez6v", peer: vm, context: "hello from alice", verificationCode: "307 961", encrypted: true,
            expires: "2026-11-21T21:20:53.123Z")
        let text = shown(invitation)
        for piece in [
            #"invitation from vm (3hx5hctom3pdm): "hello from alice""#, "verification code 307 961",
            "accept:  nearby accept vm", "decline: nearby accept --decline vm", "expires in 30 s (at 21:20:53)",
        ] { #expect(text.contains(piece), "\(text) lacks \(piece)") }
        // Another service is named; a name with spaces is quoted for the shell.
        invitation.peer = PeerRef(id: "3hx5hctom3pdm", name: "Bob's Pi")
        let chat = renderer.render(DecodedEvent(invitation, at: at), service: "chat")
        #expect(chat.contains(#"nearby accept --service chat 'Bob'\''s Pi'"#), "\(chat)")
        #expect(chat.contains(#"nearby accept --decline --service chat 'Bob'\''s Pi'"#), "\(chat)")
        // A name that cannot be typed back: the peer ID instead.
        invitation.peer = PeerRef(id: "3hx5hctom3pdm", name: "evil\u{1b}[2J")
        #expect(shown(invitation).contains("nearby accept 3hx5hctom3pdm"))
        // Answered in the same moment: one line, nothing to do.
        invitation.answeredBy = "nearby accept"
        let answered = shown(invitation)
        #expect(!answered.contains("\n") && answered.hasSuffix("— answered by nearby accept"), "\(answered)")
        // A LocalSend sender's: no code to compare, and it says so.
        invitation.kind = "localsend"
        invitation.verificationCode = ""
        invitation.answeredBy = nil
        invitation.peer = PeerRef(id: "ls-4badde53", name: "Alice laptop")
        let localSend = renderer.render(DecodedEvent(invitation, at: at), service: "localsend")
        #expect(localSend.contains("LocalSend (no verification code)") && !localSend.contains("verification code  "), "\(localSend)")
        // No code, so no sentence about the inviter's screen; and the commands work as printed (issue 59).
        #expect(!localSend.contains("inviter's screen"), "\(localSend)")
        #expect(localSend.contains("accept:  nearby accept --localsend 'Alice laptop'"), "\(localSend)")
        #expect(localSend.contains("decline: nearby accept --decline --localsend 'Alice laptop'"), "\(localSend)")
    }

    @Test func nothingFromThePeerReachesTheTerminalRaw() throws {
        let event = try #require(HumanRenderer.decode(
            #"{"event":"message",\#(time),"peer":{"id":"x","name":"a\u001b]0;pwned\u0007"},"text":"line1\nline2\u001b[31m\u202e","bytes":9}"#))
        let text = renderer.render(event)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f || $0.value == 0x202e }, "\(text)")
        #expect(text.contains(#"line1\nline2\u{1b}[31m\u{202e}"#), "\(text)")
    }

    @Test func colorsOnlyWhenAsked() throws {
        let event = try #require(HumanRenderer.decode(
            #"{"event":"connected",\#(time),\#(peer),"address":"a","verification_code":"307 961","encrypted":true,"peers":1}"#))
        #expect(!renderer.render(event).contains("\u{1b}"))
        let colored = HumanRenderer(color: true, timeZone: renderer.timeZone).render(event)
        #expect(colored.contains("\u{1b}[1;36m307 961\u{1b}[0m"))
    }

    /// A browse that ends by itself says when; only an endless one says "Ctrl-C to stop".
    @Test func browsingSaysHowItEnds() {
        let endless = line("browsing", #""service":"nearby","domain":"local.""#)
        #expect(endless.hasSuffix("browsing for _nearby._tcp in local. — Ctrl-C to stop"), "\(endless)")
        let timed = line("browsing", #""service":"nearby","domain":"local.","stops_after":3"#)
        #expect(timed.hasSuffix("— for 3 s (Ctrl-C stops sooner)"), "\(timed)")
        let now = line("browsing", #""service":"nearby","domain":"local.","now":true"#)
        #expect(now.hasSuffix("— listing what answers now"), "\(now)")
    }

    @Test func theBarFitsTheTerminal() throws {
        let event = try #require(HumanRenderer.decode(
            #"{"event":"progress",\#(time),\#(peer),"transfer":"t","direction":"send","path":"\#(String(repeating: "d/", count: 60))photo.jpg","bytes":512,"total":1024,"rate":2048}"#))
        let bar = ProgressBar.text(try #require(event.body as? Events.Progress), columns: 70)
        #expect(bar.count <= 69)
        #expect(bar.hasSuffix("photo.jpg [#####------]  50% 512 B of 1.0 KiB, 2.0 KiB/s, ETA 0:01"), "\(bar)")
        let wide = ProgressBar.text(try #require(event.body as? Events.Progress), columns: 200)
        #expect(wide.contains("[###############---------------]  50% 512 B of 1.0 KiB"), "\(wide)")
    }

    /// Never 100 % before the end, and the size done never shown as more than it is: the numbers agree.
    @Test func theBarSaysOneHundredPercentOnlyAtTheEnd() throws {
        func bar(_ bytes: Int, of total: Int) throws -> String {
            let event = try #require(HumanRenderer.decode(
                #"{"event":"progress",\#(time),\#(peer),"transfer":"t","direction":"send","path":"big.bin","bytes":\#(bytes),"total":\#(total),"rate":1048576}"#))
            return ProgressBar.text(try #require(event.body as? Events.Progress), columns: 160)
        }
        let total = 59_978_547 // 57.2 MiB
        let nearly = try bar(59_768_832, of: total) // 57.0 MiB, 99.65 %
        #expect(nearly.contains(" 99% 57.0 MiB of 57.2 MiB"), "\(nearly)")
        let lastByte = try bar(total - 1, of: total)
        #expect(lastByte.contains(" 99% 57.1 MiB of 57.2 MiB"), "\(lastByte)")
        let done = try bar(total, of: total)
        #expect(done.contains("100% 57.2 MiB of 57.2 MiB"), "\(done)")
        // For people's lines too.
        let line = renderer.render(DecodedEvent(Events.Progress(
            transfer: "t", direction: "send", peer: vm, path: "big.bin", bytes: UInt64(total - 1), total: UInt64(total), rate: 1), at: at))
        #expect(line.contains("99% of 57.2 MiB"), "\(line)")
    }

    @Test func severalFilesShowTheBatchAndBothETAs() throws {
        let event = try #require(HumanRenderer.decode(
            #"{"event":"progress",\#(time),\#(peer),"transfer":"t","direction":"send","path":"tree/b.bin","bytes":3145728,"total":10485760,"rate":1048576,"file":2,"files":3,"all_bytes":13631488,"all_total":31457280}"#))
        let bar = ProgressBar.text(try #require(event.body as? Events.Progress), columns: 160)
        #expect(bar.hasPrefix("[2/3] tree/b.bin ["), "\(bar)")
        #expect(bar.contains(" 30% 3.0 MiB of 10.0 MiB, 1.0 MiB/s, ETA 0:07 · all 43% of 30.0 MiB, ETA 0:17"), "\(bar)")
        // Narrow: the bar goes before the facts do; never wider than the terminal.
        let narrow = ProgressBar.text(try #require(event.body as? Events.Progress), columns: 90)
        #expect(narrow.count <= 89 && !narrow.contains("[#"), "\(narrow)")
        // The file at 100 %: no ETA of its own, and the bar and the batch's part keep their place.
        func at(_ bytes: Int) throws -> String {
            let event = try #require(HumanRenderer.decode(
                #"{"event":"progress",\#(time),\#(peer),"transfer":"t","direction":"send","path":"tree/b.bin","bytes":\#(bytes),"total":5242880,"rate":1048576,"file":2,"files":3,"all_bytes":\#(bytes + 1048576),"all_total":31457280}"#))
            return ProgressBar.text(try #require(event.body as? Events.Progress), columns: 160)
        }
        let (midway, full) = (try at(3145728), try at(5242880))
        #expect(full.count == midway.count, "\(midway)\n\(full)")
        #expect(full.range(of: " · all")?.lowerBound.utf16Offset(in: full) == midway.range(of: " · all")?.lowerBound.utf16Offset(in: midway), "\(midway)\n\(full)")
    }

    @Test func etaIsMinutesAndSecondsOrNothing() {
        #expect(ProgressBar.eta(remaining: 90, rate: 1) == "1:30")
        #expect(ProgressBar.eta(remaining: 1, rate: 1000) == "0:01")
        #expect(ProgressBar.eta(remaining: 3 * 3600 + 61, rate: 1) == "3:01:01")
        #expect(ProgressBar.eta(remaining: 0, rate: 10) == nil)
        #expect(ProgressBar.eta(remaining: 10, rate: 0) == nil)
        #expect(ProgressBar.eta(remaining: 1e12, rate: 1) == nil)
        #expect(ProgressBar.eta(remaining: .infinity, rate: 1) == nil)
    }

    /// What a hostile peer puts in every field it controls, through every kind that shows it.
    @Test func hostileTextInEveryFieldIsShownEscaped() throws {
        let hostile = [
            "\u{1b}]52;c;cm0gLXJmIH4=\u{07}", "\u{1b}]0;pwned\u{1b}\\", "\u{1b}[2J", "\u{9b}2J", "x\u{7f}",
            "evil\u{202e}txt", "zero\u{200b}width\u{feff}\u{061c}", "tag\u{e0041}", "a\nb\u{2028}",
        ]
        for text in hostile {
            let peer = PeerRef(id: "3hx5hctom3pdm", name: text)
            let events: [any EventBody] = [
                Events.Message(peer: peer, text: text, data: nil, bytes: 1),
                Events.Rejected(address: text, reason: text, code: text),
                Events.Failure(code: text, message: "rogue declined the invitation (\(text))", exitStatus: 3),
                Events.Suppressed(of: text, code: text, count: 19_873, seconds: 10),
                Events.Lost(peer: peer, service: text, elapsedMs: 1),
            ]
            for body in events {
                let line = EventEncoder().line(body)
                #expect(!line.unicodeScalars.contains { !TerminalText.isShowable($0) }, "\(line.debugDescription)")
                let shown = renderer.render(try #require(HumanRenderer.decode(line)))
                #expect(!shown.unicodeScalars.contains { !TerminalText.isShowable($0) }, "\(shown.debugDescription)")
            }
        }
        let summary = shown(Events.Suppressed(of: "rejected", code: "not-a-nearby-peer", count: 19_873, seconds: 10))
        #expect(summary.hasSuffix("… and 19,873 more rejected events (not-a-nearby-peer) in the last 10 s"), "\(summary)")
    }

    @Test func doctorsLongLinesWrapToTheTerminalAndAreNeverCut() throws {
        let hint = (1...60).map { "word\($0)" }.joined(separator: " ") + " 'nearby invite 10.99.0.1:4242'"
        let json = #"{"event":"check","time":"2026-11-21T10:00:00Z","check":"responders","status":"warn","detail":"nothing","hint":"\#(hint)"}"#
        var narrow = renderer
        narrow.columns = 60
        let text = narrow.render(try #require(HumanRenderer.decode(json)))
        let lines = text.split(separator: "\n")
        #expect(lines.count > 3, "\(text)")
        #expect(lines.allSatisfy { $0.count <= 59 }, "\(text)")
        #expect(lines.dropFirst(2).allSatisfy { $0.hasPrefix(String(repeating: " ", count: 20)) }, "\(text)")
        let rejoined = lines.dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(rejoined == "hint: " + hint, "\(text)")
        // Without a terminal: one line for the detail, one for the hint, whole.
        let piped = renderer.render(try #require(HumanRenderer.decode(json)))
        #expect(piped.hasSuffix("hint: " + hint) && piped.split(separator: "\n").count == 2, "\(piped)")
    }

    /// An error's sentence is ours: on a terminal it is wrapped to its width, never cut — the end
    /// is the hint to act on.
    @Test func errorsWrapToTheTerminalAndAreNeverCut() throws {
        let message = "peer 'Bobs Pi' was not found on _nearby._tcp within 30 s; 'Bob's Pi' (09okw9tg) is on _chat._tcp: "
            + "add `--service chat`; " + (1...20).map { "word\($0)" }.joined(separator: " ") + "; next: `nearby doctor 'Bobs Pi'`"
        let failure = Events.Failure(code: "peer-not-found", message: message, exitStatus: 2)
        var narrow = renderer
        narrow.columns = 80
        let text = narrow.render(try #require(HumanRenderer.decode(EventEncoder().line(failure, at: at))))
        let lines = text.split(separator: "\n")
        #expect(lines.count > 2, "\(text)")
        #expect(lines.allSatisfy { $0.count <= 79 }, "\(text)")
        #expect(!text.contains("…"), "\(text)")
        let rejoined = lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(rejoined.hasSuffix("error: " + message + " (peer-not-found, exit 2)"), "\(text)")
        // Into a pipe: one line, whole.
        let piped = renderer.render(try #require(HumanRenderer.decode(EventEncoder().line(failure, at: at))))
        #expect(piped.hasSuffix(message + " (peer-not-found, exit 2)") && !piped.contains("\n"), "\(piped)")
    }
}
