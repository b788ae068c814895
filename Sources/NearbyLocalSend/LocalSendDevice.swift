import Crypto
import Foundation
import NearbyBase
import NearbyIdentity

/// LocalSend's defaults (protocol v2, section 1).
package enum LocalSendDefaults {
    package static let port = 53317
    package static let multicastGroup = "224.0.0.167"
    /// The official app's IPv6 group (1.18 on): transient, link-local scope.
    package static let multicastGroupIPv6 = "ff12::fd3a:e420"
    package static let protocolVersion = "2.1"
    package static let apiPrefix = "/api/localsend/v2"
}

/// The bounds on what a LocalSend peer sends us, each checked before the bytes are decoded.
package enum LocalSendLimits {
    /// A discovery datagram; a larger one is dropped unread.
    package static let datagramBytes = 8 * 1024
    /// A JSON body of a request or an answer (register, info, prepare-upload and its answer).
    package static let jsonBodyBytes = 256 * 1024
    /// Nesting of objects and arrays in any JSON we read.
    package static let jsonDepth = 8
    /// An alias as kept and shown (characters), after escaping what a terminal would act on.
    package static let aliasCharacters = 64
    /// A fingerprint (an HTTPS peer's is 64 hex digits; an HTTP peer's is any short string).
    package static let fingerprintBytes = 128
    /// Devices one browse keeps at once; announcements from more are ignored, and said once.
    package static let devices = 256
}

/// An announcement, a register body or an info answer: what a LocalSend device says about itself.
/// Every field a device may leave out is optional; the ones we use are checked and bounded.
package struct DeviceMessage: Codable, Sendable, Equatable {
    package var alias: String
    package var version: String?
    package var deviceModel: String?
    package var deviceType: String?
    package var fingerprint: String?
    package var port: Int?
    package var `protocol`: String?
    package var download: Bool?
    /// v2.0/2.1: true in an announcement, false in a UDP answer. v2.2 (the official app from 1.18)
    /// sends neither: every multicast message is an announcement.
    package var announce: Bool?
    /// v1's name for `announce`, still read and sent for the older apps.
    package var announcement: Bool?

    /// Whether a multicast message asks to be answered (`announce`, else `announcement`, else yes).
    package var isAnnouncement: Bool { announce ?? announcement ?? true }

    package init(
        alias: String, version: String? = LocalSendDefaults.protocolVersion, deviceModel: String? = nil,
        deviceType: String? = "headless", fingerprint: String?, port: Int? = LocalSendDefaults.port,
        protocol: String? = "https", download: Bool? = false, announce: Bool? = nil
    ) {
        self.alias = alias
        self.version = version
        self.deviceModel = deviceModel
        self.deviceType = deviceType
        self.fingerprint = fingerprint
        self.port = port
        self.protocol = `protocol`
        self.download = download
        self.announce = announce
    }

    /// The JSON bytes, keys sorted (what we send).
    package func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(self))) ?? Array("{}".utf8)
    }

    /// Decodes what a peer sent, or nil: too large, too deep, not JSON, or missing what a device
    /// must say (an alias; a fingerprint, when `needsFingerprint`).
    package static func decode(_ bytes: some Collection<UInt8>, limit: Int, needsFingerprint: Bool = true) -> DeviceMessage? {
        guard bytes.count <= limit, JSONShape.depth(of: bytes, limit: LocalSendLimits.jsonDepth) != nil else { return nil }
        guard let message = try? JSONDecoder().decode(DeviceMessage.self, from: Data(bytes)) else { return nil }
        if needsFingerprint {
            guard let fingerprint = message.fingerprint, !fingerprint.isEmpty,
                  fingerprint.utf8.count <= LocalSendLimits.fingerprintBytes,
                  fingerprint.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
            else { return nil }
        }
        return message
    }
}

/// A LocalSend device as nearby shows it: a bounded, terminal-safe alias, a peer ID made from its
/// fingerprint, and where to reach it.
package struct LocalSendDevice: Sendable, Equatable {
    package var id: String
    package var alias: String
    package var fingerprint: String
    package var host: String
    package var port: Int
    package var https: Bool
    package var version: String?
    package var deviceType: String?
    package var deviceModel: String?
    package var interface: String?

    package init(_ message: DeviceMessage, host: String, interface: String?) {
        fingerprint = message.fingerprint ?? ""
        id = Self.peerID(fingerprint: fingerprint)
        alias = Self.shown(message.alias, limit: LocalSendLimits.aliasCharacters)
        self.host = host
        port = message.port.flatMap { (1...65535).contains($0) ? $0 : nil } ?? LocalSendDefaults.port
        https = message.protocol?.lowercased() != "http"
        version = message.version.map { Self.shown($0, limit: 16) }
        deviceType = message.deviceType.map { Self.shown($0, limit: 16) }
        deviceModel = message.deviceModel.map { Self.shown($0, limit: 32) }
        self.interface = interface
    }

    /// Text a peer chose, as we keep it: what a terminal would act on written as visible escapes,
    /// cut to `limit` characters.
    static func shown(_ text: String, limit: Int) -> String {
        TerminalText.escaped(text, limit: limit)
    }

    /// nearby's form of a peer ID (13 base-36 digits) for a LocalSend device: the first 64 bits of
    /// its fingerprint when that is SHA-256 hex (an HTTPS device's), else of SHA-256 of the string.
    package static func peerID(fingerprint: String) -> String {
        let lower = fingerprint.lowercased()
        var value: UInt64 = 0
        if lower.utf8.count == 64, let head = UInt64(lower.prefix(16), radix: 16) {
            value = head
        } else {
            for byte in SHA256.hash(data: Array(lower.utf8)).prefix(8) { value = value << 8 | UInt64(byte) }
        }
        return Base36.encode(value, width: PeerID.length)
    }

    package var ref: PeerRef { PeerRef(id: id, name: alias) }

    /// The discovery info of a `found` event.
    package var info: [String: String] {
        var info = ["fingerprint": fingerprint, "protocol": https ? "https" : "http"]
        if let deviceType { info["device_type"] = deviceType }
        if let deviceModel { info["device_model"] = deviceModel }
        return info
    }

    /// Whether `query` names this device: its ID, a prefix of it, or its alias.
    package func matches(_ query: String) -> Bool {
        !query.isEmpty && (id.hasPrefix(query.lowercased()) || alias == query)
    }
}

/// The nesting depth of a JSON text, counted without decoding it (brackets outside strings), so
/// that a deeply nested body is refused before a recursive decoder sees it. Nil when deeper than
/// `limit` or when its brackets or strings do not close.
enum JSONShape {
    package static func depth(of bytes: some Collection<UInt8>, limit: Int) -> Int? {
        var depth = 0, deepest = 0
        var inString = false, escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                deepest = max(deepest, depth)
                if depth > limit { return nil }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth < 0 { return nil }
            default: break
            }
        }
        return depth == 0 && !inString ? deepest : nil
    }
}
