import Foundation
@testable import NearbyCore
@testable import NearbyWire
import NearbyBase

/// Frame bodies for `FlatJSONTests`: as peers send them, in every form JSON allows, and damaged.
enum FlatJSONSamples {
    /// Random hot bodies, written by this version's encoders and by JSONEncoder.
    static func bodies(_ rng: inout some RandomNumberGenerator) -> [[UInt8]] {
        let open = FrameBody.Open(
            kind: [ChannelKind.file, .directory, .stream, .other("x")].randomElement(using: &rng) ?? .file,
            path: text(&rng), size: number(&rng), key: text(&rng)
        )
        let reply = FrameBody.OpenReply(
            accept: Bool.random(using: &rng), offset: number(&rng), prefixSHA256: maybe(text(&rng), &rng),
            reason: maybe(text(&rng), &rng), code: maybe(TransferCode(text(&rng)), &rng),
            held: maybe(number(&rng), &rng), heldSHA256: maybe(text(&rng), &rng)
        )
        let start = FrameBody.Start(offset: number(&rng))
        let close = FrameBody.Close(sha256: text(&rng), bytes: number(&rng), alreadyThere: maybe(Bool.random(using: &rng), &rng), savedAs: maybe(text(&rng), &rng))
        let reset = FrameBody.Reset(reason: text(&rng), code: TransferCode(text(&rng)))
        let direct: [any DirectFrameJSON] = [open, reply, start, close]
        let encodable: [any Encodable] = [open, reply, start, close, reset]
        return direct.map { Array($0.json.utf8) } + encodable.compactMap { (try? JSONEncoder().encode($0)).map(Array.init) }
    }

    /// A body of known and unknown keys in any order, each value maybe of the wrong type, keys
    /// and strings escaped at random, whitespace anywhere.
    static func noisy(_ rng: inout some RandomNumberGenerator) -> [UInt8] {
        let known = ["kind", "path", "size", "key", "accept", "offset", "prefixSHA256", "reason", "code", "sha256", "bytes", "alreadyThere", "savedAs", "held", "heldSHA256"]
        var fields: [(String, String)] = []
        for key in known where Int.random(in: 0..<3, using: &rng) > 0 {
            fields.append((key, knownValue(key, &rng)))
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            fields.append((text(&rng), anyValue(depth: Int.random(in: 0...3, using: &rng), &rng)))
        }
        if let duplicate = fields.randomElement(using: &rng), Bool.random(using: &rng) {
            fields.append((duplicate.0, anyValue(depth: 1, &rng)))
        }
        fields.shuffle(using: &rng)
        var body = space(&rng) + "{" + space(&rng)
        body += fields.map { quoted($0.0, &rng) + space(&rng) + ":" + space(&rng) + $0.1 + space(&rng) }.joined(separator: "," + space(&rng))
        if !fields.isEmpty, Int.random(in: 0..<8, using: &rng) == 0 { body += "," + space(&rng) }
        return Array((body + "}" + space(&rng)).utf8)
    }

    /// The body with one to three bytes changed, dropped, added, repeated or cut.
    static func mutated(_ body: [UInt8], _ rng: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = body
        let interesting: [UInt8] = Array("\"\\{}[],:0123456789-+.eEu tfn\t\n".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xED, 0xF4, 0xFF]
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let at = Int.random(in: 0...bytes.count, using: &rng)
            let byte = Bool.random(using: &rng) ? (interesting.randomElement(using: &rng) ?? 0) : UInt8.random(in: 0...255, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where at < bytes.count: bytes[at] = byte
            case 1 where at < bytes.count: bytes.remove(at: at)
            case 2: bytes.insert(byte, at: at)
            case 3 where at < bytes.count: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 6)], at: at)
            default: bytes = Array(bytes.prefix(at))
            }
        }
        return bytes
    }

    private static func knownValue(_ key: String, _ rng: inout some RandomNumberGenerator) -> String {
        if Int.random(in: 0..<12, using: &rng) == 0 { return anyValue(depth: 1, &rng) }
        switch key {
        case "size", "offset", "bytes", "held": return numberText(&rng)
        case "accept", "alreadyThere": return Bool.random(using: &rng) ? "true" : "false"
        default: return quoted(text(&rng), &rng)
        }
    }

    private static func anyValue(depth: Int, _ rng: inout some RandomNumberGenerator) -> String {
        switch Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &rng) {
        case 0: return "null"
        case 1: return Bool.random(using: &rng) ? "true" : "false"
        case 2, 3: return numberText(&rng)
        case 4, 5: return quoted(text(&rng), &rng)
        case 6:
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ in space(&rng) + anyValue(depth: depth - 1, &rng) + space(&rng) }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                quoted(text(&rng), &rng) + space(&rng) + ":" + anyValue(depth: depth - 1, &rng)
            }
            return "{" + space(&rng) + items.joined(separator: "," + space(&rng)) + "}"
        }
    }

    /// Mostly plain integers; now and then a form JSONDecoder reads its own way, or refuses.
    private static func numberText(_ rng: inout some RandomNumberGenerator) -> String {
        guard Int.random(in: 0..<10, using: &rng) == 0 else { return String(number(&rng)) }
        return ["1.0", "1e2", "-0", "-1", "01", "1.5", "18446744073709551616", "0.0", "1E+2", "-", "1.", "2e-1", "100e-2", "00"]
            .randomElement(using: &rng) ?? "0"
    }

    private static func number(_ rng: inout some RandomNumberGenerator) -> UInt64 {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: 0
        case 1: UInt64.random(in: 0...9, using: &rng)
        case 2: UInt64.max - UInt64.random(in: 0...3, using: &rng)
        default: UInt64.random(in: 0...UInt64.max, using: &rng)
        }
    }

    private static func maybe<T>(_ value: T, _ rng: inout some RandomNumberGenerator) -> T? {
        Bool.random(using: &rng) ? value : nil
    }

    /// Text with what JSON makes hard: quotes, backslashes, controls, line separators, accents,
    /// characters beyond the BMP, and now and then a known key.
    private static func text(_ rng: inout some RandomNumberGenerator) -> String {
        let pieces = ["a", "Z", "0", "-", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "e\u{301}", "\u{2028}", "\u{FEFF}",
                      "😀", "\u{10FFFF}", "日本", "size", "offset", "code", "K", "\u{212A}"]
        if Int.random(in: 0..<6, using: &rng) == 0 {
            return ["kind", "path", "size", "key", "offset", "code", "reason", "bytes", "sha256"].randomElement(using: &rng) ?? "key"
        }
        return (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
    }

    /// A JSON string literal of `text`, each character written plainly or escaped at random.
    private static func quoted(_ text: String, _ rng: inout some RandomNumberGenerator) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            let mustEscape = scalar.value < 0x20 || scalar == "\"" || scalar == "\\"
            if !mustEscape, Int.random(in: 0..<4, using: &rng) > 0 {
                out.unicodeScalars.append(scalar)
                continue
            }
            let short: [Unicode.Scalar: String] = ["\"": "\\\"", "\\": "\\\\", "/": "\\/", "\u{8}": "\\b", "\u{C}": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"]
            if let escape = short[scalar], Bool.random(using: &rng) {
                out += escape
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                let padded = String(repeating: "0", count: 4 - hex.count) + hex
                out += "\\u" + (Bool.random(using: &rng) ? padded.uppercased() : padded)
            }
        }
        return out + "\""
    }

    private static func space(_ rng: inout some RandomNumberGenerator) -> String {
        guard Int.random(in: 0..<4, using: &rng) == 0 else { return "" }
        return [" ", "\n", "\t", "\r\n", "  "].randomElement(using: &rng) ?? ""
    }
}
