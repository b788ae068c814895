import Crypto
import Foundation

/// A TSIG key (RFC 8945) for HMAC-SHA256. Its secret never appears in `description`, logs or errors.
package struct TSIGKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    package static let hmacSHA256 = DNSName(uncheckedLabels: [Array("hmac-sha256".utf8)])
    package let name: DNSName
    package let algorithm: DNSName
    let secret: [UInt8]

    package init(name: DNSName, secret: [UInt8]) {
        self.name = name
        algorithm = Self.hmacSHA256
        self.secret = secret
    }

    package var description: String { "TSIG key \(name) (\(algorithm))" }
    package var debugDescription: String { description }

    /// Reads a key file as `tsig-keygen` (BIND 9) writes it:
    /// `key "NAME" { algorithm hmac-sha256; secret "BASE64"; };`. Only HMAC-SHA256 is accepted.
    package static func parse(keyFile text: String) throws(DNSError) -> TSIGKey {
        var tokens: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if quoted {
                if character == "\"" { quoted = false; tokens.append(current); current = "" } else { current.append(character) }
            } else if character == "\"" {
                quoted = true
            } else if character == "{" || character == "}" || character == ";" {
                if !current.isEmpty { tokens.append(current); current = "" }
                tokens.append(String(character))
            } else if character.isWhitespace {
                if !current.isEmpty { tokens.append(current); current = "" }
            } else {
                current.append(character)
            }
        }
        guard let keyAt = tokens.firstIndex(of: "key"), keyAt + 2 < tokens.count, tokens[keyAt + 2] == "{" else {
            throw .tsig("not a key file: expected 'key \"NAME\" { … };'")
        }
        let name = try DNSName(tokens[keyAt + 1])
        guard let algorithmAt = tokens.firstIndex(of: "algorithm"), algorithmAt + 1 < tokens.count else {
            throw .tsig("the key file names no algorithm")
        }
        let algorithm = tokens[algorithmAt + 1].lowercased()
        guard algorithm == "hmac-sha256" else {
            throw .tsig("the key's algorithm is \(algorithm); nearby signs with hmac-sha256 (tsig-keygen's default)")
        }
        guard let secretAt = tokens.firstIndex(of: "secret"), secretAt + 1 < tokens.count,
              let secret = Data(base64Encoded: tokens[secretAt + 1]), !secret.isEmpty
        else { throw .tsig("the key file has no valid base64 secret") }
        return TSIGKey(name: name, secret: Array(secret))
    }
}

/// TSIG signing and verification over the exact wire bytes (RFC 8945 §4.3, §5.3), as dnspython's
/// `dns/tsig.py` does it.
package enum TSIG {
    package static let defaultFudge: UInt16 = 300

    /// The TSIG variables digested after the message (RFC 8945 §4.3.3).
    static func variables(key: TSIGKey, time: UInt64, fudge: UInt16, error: UInt16, other: [UInt8]) -> [UInt8] {
        var writer = DNSWriter(compress: false)
        writer.raw(key.name.lowercased.wire)
        writer.u16(DNSClass.any.rawValue)
        writer.u32(0)
        writer.raw(key.algorithm.lowercased.wire)
        writer.u48(time)
        writer.u16(fudge)
        writer.u16(error)
        writer.u16(UInt16(other.count))
        writer.raw(other)
        return writer.bytes
    }

    static func mac(_ parts: [[UInt8]], key: TSIGKey) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: key.secret))
        for part in parts { hmac.update(data: part) }
        return Array(hmac.finalize())
    }

    /// A response's MAC covers the request's MAC first (its length, then its bytes); a request's
    /// covers nothing before the message.
    static func requestPrefix(_ requestMAC: [UInt8]?) -> [[UInt8]] {
        guard let requestMAC else { return [] }
        var prefix = DNSWriter(compress: false)
        prefix.u16(UInt16(requestMAC.count))
        prefix.raw(requestMAC)
        return [prefix.bytes]
    }

    /// Signs an encoded message: appends a TSIG record and counts it in ARCOUNT. Returns the signed
    /// bytes and the MAC, which the response's MAC covers.
    package static func sign(_ message: [UInt8], key: TSIGKey, time: UInt64, fudge: UInt16 = defaultFudge,
                            requestMAC: [UInt8]? = nil) throws(DNSError) -> (bytes: [UInt8], mac: [UInt8]) {
        guard message.count >= 12 else { throw .malformed("message shorter than its header") }
        var parts = requestPrefix(requestMAC)
        parts.append(message)
        parts.append(variables(key: key, time: time, fudge: fudge, error: 0, other: []))
        let mac = mac(parts, key: key)
        let id = UInt16(message[0]) << 8 | UInt16(message[1])
        var writer = DNSWriter(compress: false)
        try DNSRecord(name: key.name, type: .tsig, rrClass: .any, ttl: 0, data: .tsig(TSIGData(
            algorithm: key.algorithm, timeSigned: time, fudge: fudge, mac: mac, originalID: id, error: 0, other: [])))
            .write(to: &writer)
        var signed = message
        let arcount = UInt16(signed[10]) << 8 | UInt16(signed[11])
        guard arcount < UInt16.max else { throw .malformed("too many additional records") }
        signed[10] = UInt8((arcount + 1) >> 8)
        signed[11] = UInt8((arcount + 1) & 0xFF)
        signed.append(contentsOf: writer.bytes)
        return (signed, mac)
    }

    /// Where the last record (the TSIG record, if any) starts in `bytes`, and the record itself.
    static func lastRecord(_ bytes: [UInt8]) throws(DNSError) -> (offset: Int, record: DNSRecord)? {
        var reader = DNSReader(bytes)
        _ = try reader.take(4, "header")
        let counts = [Int(try reader.u16("header")), Int(try reader.u16("header")),
                      Int(try reader.u16("header")), Int(try reader.u16("header"))]
        guard counts[3] > 0 else { return nil }
        for _ in 0..<counts[0] {
            _ = try reader.name("question")
            _ = try reader.take(4, "question")
        }
        let records = counts[1] + counts[2] + counts[3]
        guard records * 11 <= reader.remaining else { throw .malformed("counts larger than the message") }
        for _ in 0..<records - 1 { _ = try DNSRecord.read(from: &reader) }
        let offset = reader.offset
        return (offset, try DNSRecord.read(from: &reader))
    }

    /// Checks a signed message: its TSIG record names our key and algorithm, its MAC matches (after
    /// `requestMAC` when this is a response), and its time is within its fudge of `now`. Returns the
    /// TSIG data (its `error` may still say BADTIME etc. when the server signed an error).
    @discardableResult
    package static func verify(_ bytes: [UInt8], key: TSIGKey, now: UInt64, requestMAC: [UInt8]? = nil) throws(DNSError) -> TSIGData {
        guard let (offset, record) = try lastRecord(bytes), case let .tsig(tsig) = record.data else {
            throw .tsig("the message is not signed")
        }
        guard record.rrClass == .any, record.ttl == 0 else { throw .tsig("a TSIG record must have class ANY and TTL 0") }
        guard record.name == key.name, tsig.algorithm == key.algorithm else {
            throw .tsig("signed with another key (\(record.name))")
        }
        var message = Array(bytes[..<offset])
        let arcount = UInt16(message[10]) << 8 | UInt16(message[11])
        message[10] = UInt8((arcount - 1) >> 8)
        message[11] = UInt8((arcount - 1) & 0xFF)
        message[0] = UInt8(tsig.originalID >> 8)
        message[1] = UInt8(tsig.originalID & 0xFF)
        var parts = requestPrefix(requestMAC)
        parts.append(message)
        parts.append(variables(key: key, time: tsig.timeSigned, fudge: tsig.fudge, error: tsig.error, other: tsig.other))
        let expected = mac(parts, key: key)
        guard expected.count == tsig.mac.count,
              zip(expected, tsig.mac).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0
        else { throw .tsig("the MAC does not match") }
        let skew = now > tsig.timeSigned ? now - tsig.timeSigned : tsig.timeSigned - now
        guard skew <= UInt64(tsig.fudge) else { throw .tsig("signed \(skew) s away from our clock (fudge \(tsig.fudge) s)") }
        return tsig
    }
}
