import Crypto
import Foundation

/// A peer's stable identity on the network: the first 64 bits of SHA-256 of its public key
/// (SubjectPublicKeyInfo DER), in base 36, padded to 13 characters. Used as the DNS-SD instance name,
/// so two machines with the same display name never collide.
package struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    package static let length = 13
    package let rawValue: String

    package init(publicKeyDER: some DataProtocol) {
        let digest = SHA256.hash(data: publicKeyDER)
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        rawValue = Base36.encode(value, width: Self.length)
    }

    /// A peer ID read from the network or the user; nil unless it has our exact form.
    package init?(_ string: String) {
        guard string.utf8.count == Self.length, Base36.decode(string) != nil else { return nil }
        rawValue = string
    }

    package var description: String { rawValue }
    package static func < (lhs: PeerID, rhs: PeerID) -> Bool { lhs.rawValue < rhs.rawValue }

    package init(from decoder: any Decoder) throws {
        let string = try decoder.singleValueContainer().decode(String.self)
        guard let id = PeerID(string) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a peer ID: \(string)"))
        }
        self = id
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Lowercase hexadecimal, as fingerprints and SHA-256 sums are shown.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two digits a byte, written straight into the string's storage: no formatter per byte (a
    /// 32-byte digest through `String(format:)` cost more than hashing a 4 KiB file).
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (index, byte) in bytes.enumerated() {
                out[2 * index] = digits[Int(byte >> 4)]
                out[2 * index + 1] = digits[Int(byte & 0x0f)]
            }
            return bytes.count * 2
        }
    }
}

package enum Base36 {
    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    package static func encode(_ value: UInt64, width: Int = 0) -> String {
        var value = value
        var out: [UInt8] = []
        repeat {
            out.append(digits[Int(value % 36)])
            value /= 36
        } while value > 0
        while out.count < width { out.append(UInt8(ascii: "0")) }
        return String(decoding: out.reversed(), as: UTF8.self)
    }

    package static func decode(_ string: String) -> UInt64? {
        guard !string.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in string.utf8 {
            guard let digit = digits.firstIndex(of: byte) else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 36)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
