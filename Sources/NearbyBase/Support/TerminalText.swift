/// The one sanitizer for text a peer controls on its way to a terminal: names, invitation IDs,
/// goodbye and decline reasons, messages, file names, DNS-SD records. Every printer goes through it —
/// event lines for people (`HumanRenderer`), JSON lines (`EventEncoder`, and lines relayed from a
/// running node), log lines and `nearby: error:` sentences (`StderrLogHandler`) — so no byte from
/// the network can move the cursor, clear the screen, set the window title or the clipboard (OSC 0,
/// OSC 52), or reorder and hide what a person reads (bidi overrides, zero-width characters).
///
/// Shown as itself: every scalar but control characters (C0, DEL, C1 — U+009B is a CSI on many
/// terminals), format characters (Unicode category Cf: U+200B–U+200F, U+202A–U+202E,
/// U+2066–U+2069, U+061C, U+FEFF, soft hyphen, tags …) and the line and paragraph separators
/// U+2028 and U+2029. The rest is written as a visible escape.
package enum TerminalText {
    /// Whether `scalar` may reach a terminal as itself.
    package static func isShowable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x7F { return scalar.value >= 0x20 }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return false
        default: return true
        }
    }

    /// Whether all of `text` may reach a terminal as it is.
    package static func isShowable(_ text: String) -> Bool {
        // Printable ASCII is the common case: no scalar decoding for it.
        if ByteScan.isPrintableASCII(text) { return true }
        return text.unicodeScalars.allSatisfy(isShowable)
    }

    /// `text` for a line on a terminal: `\n`, `\t` and `\r` written as those two characters, every
    /// other unshowable scalar as `\u{1b}`; cut to `limit` characters (scalars), then `…`.
    package static func escaped(_ text: String, limit: Int = .max) -> String {
        if text.utf8.count <= limit, isShowable(text) { return text }
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit {
                out.append("…")
                break
            }
            count += 1
            if isShowable(scalar) {
                out.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            default: out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            }
        }
        return String(out)
    }

    /// `text` broken into lines of at most `columns - 1` characters between words, the first
    /// starting at column `first`, the others indented to `indent`. A word longer than a line is
    /// left whole (a path or an address is never split), and nothing is ever cut. nil columns:
    /// unchanged. For a text already `escaped`: it adds the only line breaks.
    package static func wrapped(_ text: String, first: Int, indent: Int, columns: Int?) -> String {
        guard let columns else { return text }
        let width = max(columns - 1, indent + 20)
        var lines: [String] = []
        var line = ""
        var used = first
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let length = word.unicodeScalars.count
            if !line.isEmpty, used + 1 + length > width {
                lines.append(line)
                line = String(word)
                used = indent + length
            } else {
                if !line.isEmpty { line += " "; used += 1 }
                line += word
                used += length
            }
        }
        lines.append(line)
        return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
    }

    /// A JSON line with every unshowable scalar written as a JSON escape (`\u007f`, `\u009b`,
    /// `\u202e`, a surrogate pair above U+FFFF): the same JSON value for any reader, and nothing a
    /// terminal acts on. Always, not only on a terminal: the escapes are lossless, and a line
    /// copied from a pipe to a terminal is as safe.
    ///
    /// Safe on a whole line because valid JSON holds such scalars only inside strings, never right
    /// after an unescaped backslash; a line that is not JSON stays not JSON, but harmless.
    package static func jsonLine(_ line: String) -> String {
        if isShowable(line) { return line }
        var out = String.UnicodeScalarView()
        out.reserveCapacity(line.unicodeScalars.underestimatedCount + 16)
        for scalar in line.unicodeScalars {
            if isShowable(scalar) {
                out.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            }
        }
        return String(out)
    }
}
