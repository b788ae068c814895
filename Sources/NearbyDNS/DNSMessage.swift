/// Response codes (RFC 1035, 2136) and the TSIG errors carried in a TSIG record (RFC 8945).
package struct DNSRcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let noError = DNSRcode(rawValue: 0)
    package static let formErr = DNSRcode(rawValue: 1)
    package static let servFail = DNSRcode(rawValue: 2)
    package static let nxDomain = DNSRcode(rawValue: 3)
    package static let notImp = DNSRcode(rawValue: 4)
    package static let refused = DNSRcode(rawValue: 5)
    package static let yxDomain = DNSRcode(rawValue: 6)
    package static let yxRRSet = DNSRcode(rawValue: 7)
    package static let nxRRSet = DNSRcode(rawValue: 8)
    package static let notAuth = DNSRcode(rawValue: 9)
    package static let notZone = DNSRcode(rawValue: 10)
    package static let badSig = DNSRcode(rawValue: 16)
    package static let badKey = DNSRcode(rawValue: 17)
    package static let badTime = DNSRcode(rawValue: 18)

    package var description: String {
        switch self {
        case .noError: "NOERROR"
        case .formErr: "FORMERR"
        case .servFail: "SERVFAIL"
        case .nxDomain: "NXDOMAIN"
        case .notImp: "NOTIMP"
        case .refused: "REFUSED"
        case .yxDomain: "YXDOMAIN"
        case .yxRRSet: "YXRRSET"
        case .nxRRSet: "NXRRSET"
        case .notAuth: "NOTAUTH"
        case .notZone: "NOTZONE"
        case .badSig: "BADSIG"
        case .badKey: "BADKEY"
        case .badTime: "BADTIME"
        default: "RCODE\(rawValue)"
        }
    }
}

package enum DNSOpcode: UInt8, Sendable {
    case query = 0
    case update = 5
}

package struct DNSQuestion: Hashable, Sendable {
    package var name: DNSName
    package var type: DNSType
    package var qClass: DNSClass

    package init(name: DNSName, type: DNSType, qClass: DNSClass = .in) {
        self.name = name
        self.type = type
        self.qClass = qClass
    }

    /// mDNS: the unicast-response (QU) bit of the class (RFC 6762 §5.4).
    package var unicastResponse: Bool { qClass.topBit }
}

/// A DNS message. In an UPDATE (RFC 2136 §2) the sections are named zone, prerequisite, update and
/// additional, but have the wire layout of question, answer, authority and additional.
package struct DNSMessage: Hashable, Sendable {
    /// The most any section may claim: a 64 KiB message cannot hold more records of ≥ 11 bytes.
    package static let maxRecordsPerSection = 65535 / 11

    package var id: UInt16
    package var isResponse = false
    package var opcode: UInt8 = 0
    package var authoritative = false
    package var truncated = false
    package var recursionDesired = false
    package var recursionAvailable = false
    package var rcode: DNSRcode = .noError
    package var questions: [DNSQuestion] = []
    package var answers: [DNSRecord] = []
    package var authority: [DNSRecord] = []
    package var additional: [DNSRecord] = []

    package init(id: UInt16, opcode: DNSOpcode = .query) {
        self.id = id
        self.opcode = opcode.rawValue
    }

    /// A query for one name and type.
    package static func query(id: UInt16, name: DNSName, type: DNSType) -> DNSMessage {
        var message = DNSMessage(id: id)
        message.questions = [DNSQuestion(name: name, type: type)]
        return message
    }

    /// The TSIG record, which must be the last additional record.
    package var tsig: DNSRecord? { additional.last.flatMap { $0.type == .tsig ? $0 : nil } }

    var flags: UInt16 {
        var flags: UInt16 = 0
        if isResponse { flags |= 0x8000 }
        flags |= UInt16(opcode & 0x0F) << 11
        if authoritative { flags |= 0x0400 }
        if truncated { flags |= 0x0200 }
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        flags |= rcode.rawValue & 0x0F
        return flags
    }

    package func encode(compress: Bool = true) throws(DNSError) -> [UInt8] {
        var writer = DNSWriter(compress: compress)
        writer.u16(id)
        writer.u16(flags)
        for count in [questions.count, answers.count, authority.count, additional.count] {
            guard count <= Int(UInt16.max) else { throw .malformed("too many records") }
            writer.u16(UInt16(count))
        }
        for question in questions {
            writer.name(question.name)
            writer.u16(question.type.rawValue)
            writer.u16(question.qClass.rawValue)
        }
        for record in answers + authority + additional { try record.write(to: &writer) }
        guard writer.bytes.count <= 65535 else { throw .malformed("message over 65535 bytes") }
        return writer.bytes
    }

    /// Parses a whole message; anything left after the last record is an error.
    package static func decode(_ bytes: [UInt8]) throws(DNSError) -> DNSMessage {
        var reader = DNSReader(bytes)
        var message = DNSMessage(id: try reader.u16("header"))
        let flags = try reader.u16("header")
        message.isResponse = flags & 0x8000 != 0
        message.opcode = UInt8(flags >> 11 & 0x0F)
        message.authoritative = flags & 0x0400 != 0
        message.truncated = flags & 0x0200 != 0
        message.recursionDesired = flags & 0x0100 != 0
        message.recursionAvailable = flags & 0x0080 != 0
        message.rcode = DNSRcode(rawValue: flags & 0x0F)
        var counts: [Int] = []
        for _ in 0..<4 { counts.append(Int(try reader.u16("header"))) }
        // A question is at least 5 bytes and a record at least 11: a count the rest cannot hold is a lie.
        let least = counts[0] * 5 + (counts[1] + counts[2] + counts[3]) * 11
        guard least <= reader.remaining else {
            throw .malformed("counts claim more records than \(reader.remaining) bytes can hold")
        }
        for _ in 0..<counts[0] {
            let name = try reader.name("question")
            message.questions.append(DNSQuestion(
                name: name, type: DNSType(rawValue: try reader.u16("question type")),
                qClass: DNSClass(rawValue: try reader.u16("question class"))))
        }
        for _ in 0..<counts[1] { message.answers.append(try DNSRecord.read(from: &reader)) }
        for _ in 0..<counts[2] { message.authority.append(try DNSRecord.read(from: &reader)) }
        for _ in 0..<counts[3] { message.additional.append(try DNSRecord.read(from: &reader)) }
        guard reader.remaining == 0 else { throw .malformed("\(reader.remaining) bytes after the last record") }
        return message
    }

    /// The rcode with the extended bits an OPT record carries, if any (RFC 6891).
    package var extendedRcode: DNSRcode {
        guard let opt = additional.first(where: { $0.type == .opt }) else { return rcode }
        return DNSRcode(rawValue: UInt16(opt.ttl >> 24) << 4 | rcode.rawValue)
    }
}
