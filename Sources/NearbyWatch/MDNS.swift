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

/// Records and questions as `watch` prints them.
package enum RecordText {
    package static func question(_ question: DNSQuestion) -> Events.WatchQuestion {
        Events.WatchQuestion(
            name: question.name.description, type: question.type.description, class: question.qClass.description,
            unicastResponse: question.unicastResponse)
    }

    package static func record(_ record: DNSRecord) -> Events.WatchRecord {
        Events.WatchRecord(
            name: record.name.description, type: record.type.description, class: record.rrClass.description,
            ttl: record.ttl, data: data(record.data, type: record.type), cacheFlush: record.cacheFlush)
    }

    /// The address of an A or AAAA record.
    package static func address(_ data: RData) -> String? {
        switch data {
        case let .a(bytes), let .aaaa(bytes): FrameParser.address(bytes[...])
        default: nil
        }
    }

    /// The data in presentation form; a type nearby does not know as RFC 3597's `\# LENGTH HEX`.
    package static func data(_ data: RData, type: DNSType) -> String {
        switch data {
        case let .a(bytes), let .aaaa(bytes): return FrameParser.address(bytes[...])
        case let .ptr(name): return name.description
        case let .srv(priority, weight, port, target): return "\(priority) \(weight) \(port) \(target)"
        case let .txt(strings): return strings.map(quoted).joined(separator: " ")
        case let .nsec(next, types): return ([next.description] + types.map(\.description)).joined(separator: " ")
        case let .soa(soa): return "\(soa.primary) \(soa.mailbox) \(soa.serial) \(soa.refresh) \(soa.retry) \(soa.expire) \(soa.minimum)"
        case .tsig: return "(TSIG)"
        case .empty: return ""
        case let .unknown(bytes):
            if type == .hinfo, let strings = characterStrings(bytes) { return strings.map(quoted).joined(separator: " ") }
            return "\\# \(bytes.count) " + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
    }

    /// A character-string quoted: `"` and `\` escaped, bytes outside printable ASCII as `\DDD`.
    static func quoted(_ bytes: [UInt8]) -> String {
        "\"" + DNSPresentation.escape(bytes, special: [UInt8(ascii: "\""), UInt8(ascii: "\\")], printableFrom: 0x20) + "\""
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
