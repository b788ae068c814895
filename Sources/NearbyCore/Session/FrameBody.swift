import Foundation
import NIOCore

/// The JSON bodies of the session's frames (all but `message`, `ping`, `pong`, `data` and `window`).
/// Decoded from untrusted bytes: size-checked first, every string bounded after.
public enum FrameBody {
    /// First frame each way: who I am, and a commitment to a fresh nonce for this session (the
    /// nonce itself is revealed in `auth`, after the other side has committed to its own).
    public struct Hello: Codable, Equatable, Sendable {
        public var version: Int
        public var id: String
        public var name: String
        /// SubjectPublicKeyInfo DER of the identity key, base64.
        public var key: String
        /// SHA-256 of the commitment prefix and the 32-byte nonce, base64.
        public var commitment: String
        /// What this node speaks beyond protocol 2 (`probe`). Absent from older nodes' hellos, and
        /// ignored by them (unknown JSON keys are), so no version bump is needed.
        public var features: [String]? = nil
    }

    /// Second frame each way, sent only after the other's hello: the nonce committed to, and proof
    /// of possession of the key, a signature over both hellos' keys and commitments.
    public struct Auth: Codable, Equatable, Sendable {
        public var nonce: String
        public var signature: String
    }

    public struct Invite: Codable, Equatable, Sendable {
        public var invitation: String
        public var context: String?
        public var timeout: Double
    }

    public struct Answer: Codable, Equatable, Sendable {
        public var invitation: String
        public var accept: Bool
        public var reason: String?
    }

    public struct Goodbye: Codable, Equatable, Sendable {
        public var reason: String
    }

    /// Opens a channel for a file: what it is called and how big it is; `key` names this file from
    /// this sender so an interrupted transfer can resume.
    public struct Open: Codable, Equatable, Sendable {
        public var kind: ChannelKind
        public var path: String
        public var size: UInt64
        public var key: String
    }

    /// The receiver's answer: how much of it is already here (a partial file from an interrupted
    /// transfer) and the SHA-256 of those bytes, or a refusal.
    public struct OpenReply: Codable, Equatable, Sendable {
        public var accept: Bool
        public var offset: UInt64
        public var prefixSHA256: String?
        public var reason: String?
        /// Why it was refused, for programs: `no-save-dir` (the node takes no files), `io-error`.
        public var code: TransferCode?
    }

    /// The sender's decision: where the data starts (the offered offset when the prefix matches its
    /// file, else 0).
    public struct Start: Codable, Equatable, Sendable {
        public var offset: UInt64
    }

    /// The end of a channel's data: the sender's SHA-256 of the whole file. The receiver answers with
    /// its own `close` (same hash: the file is in place) or a `reset`.
    public struct Close: Codable, Equatable, Sendable {
        public var sha256: String
        public var bytes: UInt64
        /// The receiver's confirming close only: it had this file already (same name and SHA-256)
        /// and kept that copy instead of making another.
        public var alreadyThere: Bool? = nil
        /// The receiver's confirming close only: the name it saved the file under, when not the one
        /// offered (`x (1).txt` beside another `x.txt`). A peer's words: bounded and checked by the
        /// sender (`Close.savedName`).
        public var savedAs: String? = nil

        /// `savedAs` when it is a plain file name of sane length that differs from `offered`'s.
        public func savedName(offered: String) -> String? {
            guard let savedAs, !savedAs.isEmpty, savedAs.utf8.count <= 255, !savedAs.contains("/"),
                  savedAs != offered.split(separator: "/").last.map(String.init) else { return nil }
            return savedAs
        }
    }

    public struct Reset: Codable, Equatable, Sendable {
        public var reason: String
        public var code: TransferCode
    }

    public static let maxContextBytes = 4096
    public static let maxReasonBytes = 256

    public static func frame(_ kind: Frame.Kind, _ body: some Encodable) -> Frame {
        if let direct = body as? any DirectFrameJSON { return Frame(kind: kind, payload: ByteBuffer(string: direct.json)) }
        let data = (try? JSONEncoder().encode(body)) ?? Data("{}".utf8)
        return Frame(kind: kind, payload: ByteBuffer(bytes: data))
    }
}

extension FrameBody {
    static func frame(_ kind: Frame.Kind, _ body: some Encodable, channel: UInt32) -> Frame {
        var frame = frame(kind, body)
        frame.channel = channel
        return frame
    }
}
