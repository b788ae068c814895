import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire
@testable import NearbyTransfer

/// Strings a hostile peer sends as its name, invitation ID, goodbye or decline reason, message.
enum Hostile {
    static let strings: [String] = [
        "\u{1b}]52;c;cm0gLXJmIH4=\u{07}",  // OSC 52: set the clipboard
        "\u{1b}]0;pwned\u{1b}\\",  // OSC 0: the window title, ended by ST
        "\u{1b}[2J\u{1b}[H",  // CSI 2J: clear the screen
        "\u{9b}2J",  // the same with the C1 CSI (U+009B, C2 9B in UTF-8)
        "\u{9d}0;title\u{9c}",  // C1 OSC … ST
        "del\u{7f}ete",
        "evil\u{202e}txt.exe",  // right-to-left override
        "zero\u{200b}width\u{200c}\u{200d}\u{2060}",
        "\u{feff}bom\u{061c}alm\u{2066}isolate\u{2069}\u{200e}\u{200f}",
        "line\u{2028}para\u{2029}",
        "tag\u{e0041}\u{e007f}",  // Unicode tags (category Cf, beyond U+FFFF)
        "nul\u{0}bell\u{7}back\u{8}",
        "two\nlines\tand\rreturn",
        "soft\u{ad}hyphen",
    ]

    /// A scalar that must never reach a terminal as itself.
    static func isRaw(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0xAD, 0x061C, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x206F, 0xFEFF, 0xE0000...0xE007F: true
        default: false
        }
    }

    static func hasRaw(_ text: String) -> Bool { text.unicodeScalars.contains(where: isRaw) }
}

@Suite struct TerminalTextTests {
    @Test(arguments: Hostile.strings) func escapedShowsNothingRaw(_ hostile: String) {
        let shown = TerminalText.escaped(hostile)
        #expect(!Hostile.hasRaw(shown), "\(shown.debugDescription)")
        #expect(shown != hostile)
    }

    @Test func escapesAreVisibleAndPlainTextStays() {
        #expect(TerminalText.escaped("\u{1b}[2J") == #"\u{1b}[2J"#)
        #expect(TerminalText.escaped("\u{9b}2J") == #"\u{9b}2J"#)
        #expect(TerminalText.escaped("a\u{202e}b\u{200b}") == #"a\u{202e}b\u{200b}"#)
        #expect(TerminalText.escaped("a\nb\tc\r") == #"a\nb\tc\r"#)
        #expect(TerminalText.escaped("x\u{7f}") == #"x\u{7f}"#)
        for plain in ["Bob's Pi", "Zoë's Mac — 📱", "日本語のなまえ", "עברית", "a/b\\c \"q\""] {
            #expect(TerminalText.escaped(plain) == plain)
            #expect(TerminalText.isShowable(plain))
        }
        #expect(TerminalText.escaped("abcdef", limit: 3) == "abc…")
        #expect(TerminalText.escaped("\u{1b}\u{1b}\u{1b}", limit: 2) == #"\u{1b}\u{1b}…"#)
    }

    @Test(arguments: Hostile.strings) func jsonLinesStayJSONAndDecodeToTheSameText(_ hostile: String) throws {
        let line = EventEncoder().line(Events.Rejected(address: "10.0.0.1:1", reason: hostile, code: hostile))
        #expect(!Hostile.hasRaw(line), "\(line.debugDescription)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["reason"] as? String == hostile)
        #expect(object["code"] as? String == hostile)
    }

    @Test func directlyWrittenEventsAreEscapedToo() throws {
        let text = Hostile.strings.joined(separator: " ")
        let peer = PeerRef(id: "x\u{9b}", name: "n\u{202e}")
        let line = EventEncoder().line(Events.Message(peer: peer, text: text, data: nil, bytes: text.utf8.count))
        #expect(!Hostile.hasRaw(line), "\(line.debugDescription)")
        #expect(line.contains(#"\u202e"#) && line.contains(#"\u009b"#) && line.contains(#"\udb40\udc41"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["text"] as? String == text)
        #expect((object["peer"] as? [String: Any])?["name"] as? String == "n\u{202e}")
    }

    @Test func aRelayedLineIsMadeSafeWithoutChangingItsValue() throws {
        // A line as an older node writes it: DEL, C1 and bidi raw inside a JSON string.
        let raw = "{\"event\":\"message\",\"text\":\"a\u{7f}\u{9b}2J\u{202e}\\\\\u{202e}\\\"\"}"
        let safe = TerminalText.jsonLine(raw)
        #expect(!Hostile.hasRaw(safe))
        let before = try #require(try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: String])
        let after = try #require(try JSONSerialization.jsonObject(with: Data(safe.utf8)) as? [String: String])
        #expect(before == after)
        #expect(TerminalText.jsonLine(#"{"event":"x","n":1}"#) == #"{"event":"x","n":1}"#)
    }

    @Test(arguments: Hostile.strings) func logLinesAndErrorSentencesShowNothingRaw(_ hostile: String) {
        for error in [
            NearbyError.declined(peer: "rogue\u{202e}", reason: hostile), .connectionFailed("goodbye: " + hostile),
            .peerNotFound(hostile, waitedSeconds: 3), .keyChanged(peer: hostile, knownPeers: "known_peers"),
        ] {
            let line = StderrLogHandler.line(.error, error.errorDescription ?? "")
            #expect(line.hasPrefix("nearby: error: ") && line.hasSuffix("\n"))
            #expect(!Hostile.hasRaw(String(line.dropLast())), "\(line.debugDescription)")
        }
        let info = StderrLogHandler.line(.info, "connection with x closed: " + hostile)
        #expect(!Hostile.hasRaw(String(info.dropLast())), "\(info.debugDescription)")
    }

    /// The sentence a command ends with on stderr: on a terminal, wrapped between words to its
    /// width, never cut; elsewhere one line.
    @Test func errorSentencesWrapOnATerminalAndAreNeverCut() {
        let message = (1...80).map { "word\($0)" }.joined(separator: " ") + "; next: `nearby doctor bob`"
        let wrapped = StderrLogHandler.line(.error, message, columns: 60)
        let lines = wrapped.dropLast().split(separator: "\n")
        #expect(lines.count > 5 && lines.allSatisfy { $0.count <= 59 }, "\(wrapped)")
        #expect(lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ") == "nearby: error: " + message)
        #expect(StderrLogHandler.line(.error, message, columns: nil) == "nearby: error: " + message + "\n")
    }

    @Test func namesAndPathsDropWhatTheTerminalWouldNotShow() {
        #expect(HandshakeStateMachine.sanitized("a\u{1b}[2Jb\u{202e}c\u{200b}") == "a[2Jbc")
        #expect(SafePath.relative("x\u{9b}y\u{7f}/\u{feff}z") == "xy/z")
    }
}

/// The word-at-a-time scans answer as a byte-by-byte loop does, for every byte in every position.
@Suite struct ByteScanTests {
    private func naive(_ text: String) -> (printable: Bool, escape: Bool) {
        (text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, text.utf8.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C })
    }

    @Test func everyByteInEveryPositionOfAWord() {
        let plain = Array("abcdefghijklmnopq".utf8)
        for length in 0...17 {
            for position in 0..<max(length, 1) {
                for byte in [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0xC3, 0xFF] as [UInt8] {
                    var bytes = Array(plain.prefix(length))
                    if position < length { bytes[position] = byte }
                    // Invalid UTF-8 is repaired by String; compare on what String holds.
                    let text = String(decoding: bytes, as: UTF8.self)
                    let expected = naive(text)
                    #expect(ByteScan.isPrintableASCII(text) == expected.printable, "\(bytes)")
                    #expect(ByteScan.needsJSONEscape(text) == expected.escape, "\(bytes)")
                }
            }
        }
    }

    @Test func randomTexts() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                Bool.random(using: &generator) ? UInt8.random(in: 0x20...0x7E, using: &generator) : UInt8.random(in: 0...0xFF, using: &generator)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let expected = naive(text)
            #expect(ByteScan.isPrintableASCII(text) == expected.printable, "\(bytes)")
            #expect(ByteScan.needsJSONEscape(text) == expected.escape, "\(bytes)")
        }
    }
}
