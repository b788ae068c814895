import Crypto
import Foundation
import NIOCore
import NearbyBase

/// `send --unreliable` on the wire (docs/protocol.md, "Datagrams"): one UDP datagram per message,
///
///     tag (8) | sequence (8) | ChaCha20-Poly1305 ciphertext of the message | Poly1305 tag (16)
///
/// `tag` is the receiver's name for the session (it chose it and sent it inside the TLS session), the
/// sequence number counts from 1 per direction and is the nonce, and the first 16 bytes are the
/// authenticated data. Each direction has its own key, chosen by its sender and sent inside the TLS
/// session, so a nonce is never used twice with one key.
package enum Datagram {
    /// The largest message: with the 32 bytes of framing and IP/UDP headers it fits the 1,280-byte
    /// IPv6 minimum MTU, so a datagram is never fragmented on the way.
    package static let maxPayload = NearbyError.unreliableMessageLimit
    package static let headerSize = 16
    package static let overhead = headerSize + 16
    package static let keyBytes = 32

    /// The datagram carrying `payload`.
    package static func seal(_ payload: ByteBuffer, key: SymmetricKey, tag: UInt64, sequence: UInt64) throws -> ByteBuffer {
        var header = ByteBuffer()
        header.writeInteger(tag)
        header.writeInteger(sequence)
        let box = try ChaChaPoly.seal(
            Array(payload.readableBytesView), using: key, nonce: nonce(sequence), authenticating: Array(header.readableBytesView))
        header.writeBytes(box.ciphertext)
        header.writeBytes(box.tag)
        return header
    }

    /// The session tag at the front of a datagram, to find its key; nil when it is too short to be one.
    package static func tag(of datagram: ByteBuffer) -> UInt64? {
        guard datagram.readableBytes >= overhead else { return nil }
        return datagram.getInteger(at: datagram.readerIndex, as: UInt64.self)
    }

    package static func sequence(of datagram: ByteBuffer) -> UInt64? {
        guard datagram.readableBytes >= overhead else { return nil }
        return datagram.getInteger(at: datagram.readerIndex + 8, as: UInt64.self)
    }

    /// The message, or nil when the datagram was not sealed with `key` as it is (tampered, forged,
    /// truncated, or too big to be ours).
    package static func open(_ datagram: ByteBuffer, key: SymmetricKey) -> [UInt8]? {
        guard datagram.readableBytes >= overhead, datagram.readableBytes <= maxPayload + overhead,
              let sequence = sequence(of: datagram)
        else { return nil }
        let bytes = Array(datagram.readableBytesView)
        let header = bytes[0..<headerSize]
        let ciphertext = bytes[headerSize..<(bytes.count - 16)]
        let authTag = bytes[(bytes.count - 16)...]
        guard let box = try? ChaChaPoly.SealedBox(nonce: nonce(sequence), ciphertext: ciphertext, tag: authTag),
              let plain = try? ChaChaPoly.open(box, using: key, authenticating: header)
        else { return nil }
        return Array(plain)
    }

    static func nonce(_ sequence: UInt64) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: sequence >> (8 * (7 - index))) }
        // 12 bytes is always a valid ChaCha20-Poly1305 nonce.
        return (try? ChaChaPoly.Nonce(data: bytes)) ?? ChaChaPoly.Nonce()
    }
}

/// The sliding window of sequence numbers already accepted (as in IPsec and WireGuard): a datagram
/// is new when its number is above the highest seen, or within the last `size` and not seen yet.
/// Anything older is dropped as a possible replay. Check before authenticating, commit after.
struct ReplayWindow: Sendable, Equatable {
    package static let size: UInt64 = 1024
    package private(set) var highest: UInt64 = 0
    /// Bit i of the window: sequence `highest - i` was accepted.
    private var bits = [UInt64](repeating: 0, count: Int(size / 64))

    package init() {}

    /// Whether `sequence` may be new (0 is never sent).
    package func check(_ sequence: UInt64) -> Bool {
        guard sequence > 0 else { return false }
        if sequence > highest { return true }
        let offset = highest - sequence
        guard offset < Self.size else { return false }
        return bits[Int(offset / 64)] & (1 << (offset % 64)) == 0
    }

    /// Records `sequence` as accepted; false when it was not new after all.
    package mutating func commit(_ sequence: UInt64) -> Bool {
        guard check(sequence) else { return false }
        if sequence > highest {
            shift(by: sequence - highest)
            highest = sequence
        }
        let offset = highest - sequence
        bits[Int(offset / 64)] |= 1 << (offset % 64)
        return true
    }

    /// Ages every bit by `distance` positions (towards higher offsets).
    private mutating func shift(by distance: UInt64) {
        guard distance < Self.size else {
            bits = bits.map { _ in 0 }
            return
        }
        let words = Int(distance / 64)
        let shift = distance % 64
        for index in stride(from: bits.count - 1, through: 0, by: -1) {
            let source = index - words
            var value: UInt64 = source >= 0 ? bits[source] << shift : 0
            if shift > 0, source - 1 >= 0 { value |= bits[source - 1] >> (64 - shift) }
            bits[index] = value
        }
    }
}

extension FrameBody {
    /// Sent each way once the session begins: where and how to send this side unreliable messages —
    /// its UDP port, the tag to put on datagrams for it, and the key it seals its own datagrams with.
    package struct Datagrams: Codable, Equatable, Sendable {
        package var port: Int
        /// 16 hex digits.
        package var tag: String
        /// 32 bytes, base64.
        package var key: String

        package init(port: Int, tag: UInt64, key: [UInt8]) {
            self.port = port
            self.tag = String(format: "%016llx", tag)
            self.key = Data(key).base64EncodedString()
        }

        /// The checked contents, or nil when malformed.
        package var checked: (port: Int, tag: UInt64, key: [UInt8])? {
            guard (1...65535).contains(port), tag.utf8.count == 16, let tagValue = UInt64(tag, radix: 16),
                  let bytes = Data(base64Encoded: key), bytes.count == Datagram.keyBytes
            else { return nil }
            return (port, tagValue, Array(bytes))
        }
    }
}
