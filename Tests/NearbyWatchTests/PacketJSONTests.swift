import Foundation
import NearbyBase
import Testing
@testable import NearbyWatch

/// `packet` lines are written by hand (`PacketJSON.swift`); here they are held to what JSONEncoder
/// writes for the same packet: odd strings, empty and full sections, every optional present and absent.
@Suite struct PacketJSONTests {
    static let date = Date(timeIntervalSince1970: 1_795_000_000.5)

    static func encoderFields(_ body: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return String(decoding: try encoder.encode(body).dropFirst(), as: UTF8.self)
    }

    static func packets(_ text: String) -> [Events.Packet] {
        let record = Events.WatchRecord(name: text + ".local.", type: "TXT", class: "IN", ttl: 4500, data: "\"" + text + "\"", cacheFlush: true)
        let plain = Events.WatchRecord(name: "h2.local.", type: "A", class: "IN", ttl: 0, data: "10.99.0.2", cacheFlush: false)
        let question = Events.WatchQuestion(name: text, type: "PTR", class: "IN", unicastResponse: true)
        let full = Events.Meaning(kind: "address", name: text, service: "_nearby._tcp.local.", host: "h2.local.", port: 5353, addresses: ["10.99.0.2", "fe80::1%nb0"])
        let bare = Events.Meaning(kind: "question", name: text, service: nil, host: nil, port: nil, addresses: nil)
        let empty = Events.Meaning(kind: "resolved", name: "", service: nil, host: text, port: 0, addresses: [])
        return [
            Events.Packet(
                captured: "2026-11-21T21:20:23.123Z", interface: "nb0", source: "10.99.0.2", sourcePort: 5353, destination: "224.0.0.251",
                destinationPort: 5353, kind: "response", id: 0, size: 1500, truncated: false, questions: [],
                answers: [record, plain], authority: [plain], additional: [record], meaning: [full, bare, empty]),
            Events.Packet(
                captured: text, interface: nil, source: "fe80::1", sourcePort: 40_000, destination: "ff02::fb", destinationPort: 5353,
                kind: "query", id: 65_535, size: 12, truncated: true, questions: [question, question], answers: [], authority: [],
                additional: [], meaning: []),
        ]
    }

    @Test(arguments: [
        "plain", "", "quote \" and backslash \\ and /slash/", "tab\tnew\nline\rcr", "\u{08}\u{0C}\u{00}\u{01}\u{1F}\u{7F}",
        "ünïcødé ✓ 🙂", "\u{2028}\u{2029}\u{202E}", "dots.in\\.name",
    ])
    func packetsAreWrittenByHandExactlyAsJSONEncoderWouldWriteThem(_ text: String) throws {
        for packet in Self.packets(text) {
            let line = EventEncoder().line(packet, at: Self.date)
            let head = #"{"event":"packet","time":"2026-11-18T11:06:40.500Z","#
            #expect(line == TerminalText.jsonLine(head + (try Self.encoderFields(packet))))
        }
    }
}
