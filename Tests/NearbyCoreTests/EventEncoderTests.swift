import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

@Suite struct EventEncoderTests {
    let date = Date(timeIntervalSince1970: 1_795_000_000.5)

    @Test func envelopeFirstThenSortedFields() {
        let line = EventEncoder().line(
            Events.Advertising(
                peer: PeerRef(id: "abc", name: "n \"q\" /"), service: "chat", domain: "local.", port: 4,
                info: ["z": "1", "a": "2", "myKey": "3"]),
            at: date)
        #expect(line == #"{"event":"advertising","time":"2026-11-18T11:06:40.500Z","domain":"local.","info":{"a":"2","myKey":"3","z":"1"},"peer":{"id":"abc","name":"n \"q\" /"},"port":4,"service":"chat"}"#)
    }

    @Test func fieldsMarkedNullAreWrittenAsNull() {
        let connecting = EventEncoder().line(Events.Connecting(peer: nil, address: "10.0.0.1:4"), at: date)
        #expect(connecting == #"{"event":"connecting","time":"2026-11-18T11:06:40.500Z","address":"10.0.0.1:4","peer":null}"#)
        let invitation = EventEncoder().line(Events.Invitation(
            invitation: "i", peer: PeerRef(id: "p", name: nil), context: nil, verificationCode: "123 456", encrypted: true, expires: "e"), at: date)
        #expect(invitation.contains(#""context":null"#) && invitation.contains(#""peer":{"id":"p","name":null}"#) && !invitation.contains("answered_by"))
        let check = EventEncoder().line(Events.Check(DoctorCheck("daemon", .ok, "d")), at: date)
        #expect(check.contains(#""hint":null"#), "\(check)")
    }

    @Test func foundHasEveryFieldEvenWhenUnknown() throws {
        let seen = Events.PeerSeen(
            peer: PeerRef(id: "x", name: nil), service: "s", kind: .mpc, protocolVersion: nil, info: [:], host: nil,
            port: nil, addresses: [], interface: nil, isSelf: false, elapsedMs: 7)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(EventEncoder().line(seen, at: date).utf8)) as? [String: Any])
        #expect(Set(object.keys) == [
            "event", "time", "peer", "service", "kind", "protocol", "info", "host", "port", "addresses", "interface",
            "self", "elapsed_ms",
        ])
        #expect(object["kind"] as? String == "mpc")
        #expect(object["host"] is NSNull)
    }

    @Test func updatedCarriesWhatChanged() throws {
        let seen = Events.PeerSeen(
            peer: PeerRef(id: "x", name: "n"), service: "s", kind: .nearby, protocolVersion: "1", info: ["a": "b"],
            host: "h", port: 1, addresses: ["10.0.0.1"], interface: "e0", isSelf: true, elapsedMs: 7)
        let line = EventEncoder().line(Events.PeerUpdated(changed: ["info"], seen: seen), at: date)
        #expect(line.hasPrefix(#"{"event":"updated","#))
        #expect(line.contains(#""changed":["info"]"#))
        #expect(line.contains(#""self":true"#))
    }

    @Test func memorySinkCollectsLines() {
        let sink = MemorySink()
        sink.emit(Events.Browsing(service: "s", domain: "local."))
        #expect(sink.lines.count == 1)
        #expect(sink.lines[0].hasPrefix(#"{"event":"browsing","time":""#))
    }

    /// What JSONEncoder writes for the same body, for comparing the hand-written path with it.
    private func encoderFields(_ body: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return String(decoding: try encoder.encode(body).dropFirst(), as: UTF8.self)
    }

    @Test(arguments: [
        "plain", "", "quote \" and backslash \\ and /slash/", "tab\tnew\nline\rcr", "\u{08}\u{0C}\u{00}\u{01}\u{1F}\u{7F}",
        "ünïcødé ✓ 🙂", "\u{2028}\u{2029}",
    ])
    func messagesAreWrittenByHandExactlyAsJSONEncoderWouldWriteThem(_ text: String) throws {
        let peer = PeerRef(id: "abc", name: text)
        for message in [
            Events.Message(peer: peer, text: text, data: nil, bytes: text.utf8.count, reliable: true),
            Events.Message(peer: PeerRef(id: "x", name: nil), text: nil, data: "AAE=", bytes: 2, reliable: false),
        ] {
            let line = EventEncoder().line(message, at: date)
            let head = #"{"event":"message","time":"2026-11-18T11:06:40.500Z","#
            // The same, once what a terminal would act on (DEL, U+2028 …) is escaped in both.
            #expect(line == TerminalText.jsonLine(head + (try encoderFields(message))))
        }
    }

    /// The file events a folder brings by the thousand are written by hand, exactly as JSONEncoder
    /// would write them: every optional field present and absent, odd names, whole and fractional numbers.
    @Test(arguments: ["plain.txt", "dir/ünï \"q\" \\ /x\t.bin", ""])
    func fileEventsAreWrittenByHandExactlyAsJSONEncoderWouldWriteThem(_ path: String) throws {
        let peer = PeerRef(id: "abc", name: path.isEmpty ? nil : path)
        let batch = Events.Progress.Batch(file: 2, files: 5000, before: 4096, total: 20_480_000)
        var sent = Events.FileSent(
            transfer: "t-1", peer: peer, path: path, bytes: 4096, skipped: 0, sha256: "ab", seconds: 0.001, alreadyThere: true)
        sent.source = "/src/" + path
        sent.savedAs = path + " (1)"
        let bodies: [any EventBody] = [
            Events.FileStarted(transfer: "t-1", direction: "receive", peer: peer, path: path, bytes: 4096, skipped: 12),
            Events.Progress(transfer: "t", direction: "send", peer: peer, path: path, bytes: 7, total: 9, rate: 1_234_567, batch: batch, done: 7),
            Events.Progress(transfer: "t", direction: "receive", peer: peer, path: path, bytes: 0, total: 0, rate: 0),
            sent,
            Events.FileSent(transfer: "t", peer: peer, path: path, bytes: 1 << 40, skipped: 3, sha256: "", seconds: 12.5),
            Events.FileReceived(transfer: "t", peer: peer, path: path, bytes: 0, skipped: 0, sha256: "cd", seconds: 1e-5),
            Events.FileReceived(transfer: "t", peer: peer, path: path, bytes: 1, skipped: 0, sha256: "cd", seconds: 3, alreadyThere: false),
        ]
        for body in bodies {
            let line = EventEncoder().line(body, at: date)
            let head = #"{"event":""# + type(of: body).event + #"","time":"2026-11-18T11:06:40.500Z","#
            #expect(line == TerminalText.jsonLine(head + (try encoderFields(body))))
        }
    }

    @Test func timestampsMatchTheISO8601Style() {
        for seconds in [0.0, 1_795_000_000.5, 1_795_000_000.001, 1_795_000_000.999, 951_782_400.25, 4_102_444_799.123] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(EventEncoder.timestamp(date) == date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
    }
}
