import NearbyBase
import NearbyDNS

/// A datagram read as mDNS: the message, or why it is not one. Never throws and never traps:
/// whatever bytes arrive, the answer is one of the two.
package enum MDNSDecoded: Sendable {
    case message(DNSMessage)
    case malformed(String)

    package init(_ payload: [UInt8]) {
        do {
            self = .message(try DNSMessage.decode(payload))
        } catch {
            switch error {
            case let .malformed(why), let .tsig(why): self = .malformed(why)
            }
        }
    }
}

/// Records and questions as `watch` prints them. Names and strings as people wrote them (UTF-8:
/// "Küche’s TV"), with only what a terminal must not receive escaped; what one record can make of
/// a packet is bounded (NSEC type lists, long TXT and unknown data summarized) unless `full`.
package enum RecordText {
    /// Past these, `data` summarizes: NSEC types listed, TXT and unknown data bytes shown.
    package static let listedTypes = 16
    package static let shownBytes = 400

    package static func question(_ question: DNSQuestion) -> Events.WatchQuestion {
        Events.WatchQuestion(
            name: question.name.shown, type: question.type.description, class: question.qClass.description,
            unicastResponse: question.unicastResponse)
    }

    package static func record(_ record: DNSRecord, full: Bool = false) -> Events.WatchRecord {
        Events.WatchRecord(
            name: record.name.shown, type: record.type.description, class: record.rrClass.description,
            ttl: record.ttl, data: data(record.data, type: record.type, full: full), cacheFlush: record.cacheFlush)
    }

    /// The address of an A or AAAA record.
    package static func address(_ data: RData) -> String? {
        switch data {
        case let .a(bytes), let .aaaa(bytes): FrameParser.address(bytes[...])
        default: nil
        }
    }

    /// The data in presentation form; a type nearby does not know as RFC 3597's `\# LENGTH HEX`.
    package static func data(_ data: RData, type: DNSType, full: Bool = false) -> String {
        switch data {
        case let .a(bytes), let .aaaa(bytes): return FrameParser.address(bytes[...])
        case let .ptr(name): return name.shown
        case let .srv(priority, weight, port, target): return "\(priority) \(weight) \(port) \(target.shown)"
        case let .txt(strings): return txt(strings, full: full)
        case let .nsec(next, types):
            let listed = full ? types : Array(types.prefix(listedTypes))
            let more = types.count - listed.count
            return ([next.shown] + listed.map(\.description)).joined(separator: " ") + (more > 0 ? " … (\(more) more types, \(types.count) in all)" : "")
        case let .soa(soa): return "\(soa.primary.shown) \(soa.mailbox.shown) \(soa.serial) \(soa.refresh) \(soa.retry) \(soa.expire) \(soa.minimum)"
        case .tsig: return "(TSIG)"
        case .empty: return ""
        case let .unknown(bytes):
            if type == .hinfo, let strings = characterStrings(bytes) { return txt(strings, full: full) }
            let shown = full ? bytes : Array(bytes.prefix(shownBytes / 2))
            return "\\# \(bytes.count) " + shown.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                + (shown.count < bytes.count ? " … (\(bytes.count - shown.count) more bytes)" : "")
        }
    }

    /// Character-strings quoted, as many as fit in `shownBytes` unless `full`.
    static func txt(_ strings: [[UInt8]], full: Bool) -> String {
        var out: [String] = [], used = 0
        for string in strings {
            if !full, used + string.count > shownBytes, !out.isEmpty || string.count > shownBytes {
                if out.isEmpty { out.append(quoted(Array(string.prefix(shownBytes))) + "…"); used = shownBytes }
                let rest = strings.count - out.count
                let bytes = strings.reduce(0) { $0 + $1.count }
                return (out + ["… (\(rest) more string\(rest == 1 ? "" : "s"); \(strings.count) strings, \(bytes) bytes in all)"]).joined(separator: " ")
            }
            out.append(quoted(string))
            used += string.count
        }
        return out.joined(separator: " ")
    }

    /// A character-string quoted: `"` and `\` escaped, the rest as text (`shownText`).
    static func quoted(_ bytes: [UInt8]) -> String {
        "\"" + shownText(bytes, special: [UInt8(ascii: "\""), UInt8(ascii: "\\")]) + "\""
    }

    /// Bytes as UTF-8 text, as people wrote them: `special` ASCII characters after a backslash, and
    /// as RFC 1035's `\DDD` only what a terminal must not receive (control and format characters:
    /// C0, DEL, C1, bidi overrides, zero-width ones — `TerminalText.isShowable`) and bytes that are
    /// not UTF-8. Lossless: the bytes can be read back from it.
    package static func shownText(_ bytes: [UInt8], special: [UInt8]) -> String {
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && !special.contains($0) }) { return String(decoding: bytes, as: UTF8.self) }
        var out = String.UnicodeScalarView()
        func escape(_ part: ArraySlice<UInt8>) {
            for byte in part {
                let digits = String(byte)
                out.append(contentsOf: ("\\" + String(repeating: "0", count: 3 - digits.count) + digits).unicodeScalars)
            }
        }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var position = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                let count = encoded.count
                defer { position += count }
                if scalar.isASCII, special.contains(UInt8(scalar.value)) {
                    out.append("\\")
                    out.append(scalar)
                } else if TerminalText.isShowable(scalar) {
                    out.append(scalar)
                } else {
                    escape(bytes[position..<position + count])
                }
            case let .error(length):
                escape(bytes[position..<min(bytes.count, position + length)])
                position += length
            case .emptyInput:
                return String(out)
            }
        }
    }

    /// Length-prefixed strings filling `bytes` exactly, or nil.
    static func characterStrings(_ bytes: [UInt8]) -> [[UInt8]]? {
        var strings: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            guard index + 1 + length <= bytes.count else { return nil }
            strings.append(Array(bytes[index + 1..<index + 1 + length]))
            index += 1 + length
        }
        return strings
    }
}

extension DNSName {
    /// The name as people wrote it: each label as UTF-8 text ("Küche’s TV._airplay._tcp.local."),
    /// `.` and `\` in a label escaped, controls, bidi and bytes that are not UTF-8 as `\DDD`.
    package var shown: String {
        guard !labels.isEmpty else { return "." }
        return labels.map { RecordText.shownText($0, special: [UInt8(ascii: "."), UInt8(ascii: "\\")]) }.joined(separator: ".") + "."
    }
}
