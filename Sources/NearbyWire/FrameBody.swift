import Foundation
import NIOCore
import NearbyBase

/// The JSON bodies of the session's frames (all but `message`, `ping`, `pong`, `data` and `window`).
/// Decoded from untrusted bytes: size-checked first, every string bounded after.
package enum FrameBody {
    /// First frame each way: who I am, and a commitment to a fresh nonce for this session (the
    /// nonce itself is revealed in `auth`, after the other side has committed to its own).
    package struct Hello: Codable, Equatable, Sendable {
        package var version: Int
        package var id: String
        package var name: String
        /// SubjectPublicKeyInfo DER of the identity key, base64.
        package var key: String
        /// SHA-256 of the commitment prefix and the 32-byte nonce, base64.
        package var commitment: String
        /// What this node speaks beyond protocol 2 (`probe`). Absent from older nodes' hellos, and
        /// ignored by them (unknown JSON keys are), so no version bump is needed.
        package var features: [String]? = nil
    }

    /// Second frame each way, sent only after the other's hello: the nonce committed to, and proof
    /// of possession of the key, a signature over both hellos' keys and commitments.
    package struct Auth: Codable, Equatable, Sendable {
        package var nonce: String
        package var signature: String
    }

    package struct Invite: Codable, Equatable, Sendable {
        package var invitation: String
        package var context: String?
        package var timeout: Double
        /// What the invitation is for (files, a stream): shown to the person who answers. Newer
        /// than the frame: an older node ignores the key, and one that sends none offers nothing named.
        package var offer: Offer?

        package init(invitation: String, context: String? = nil, timeout: Double, offer: Offer? = nil) {
            self.invitation = invitation
            self.context = context
            self.timeout = timeout
            self.offer = offer
        }
    }

    package struct Answer: Codable, Equatable, Sendable {
        package var invitation: String
        package var accept: Bool
        package var reason: String?
    }

    package struct Goodbye: Codable, Equatable, Sendable {
        package var reason: String
    }

    /// Opens a channel for a file: what it is called and how big it is; `key` names this file from
    /// this sender so an interrupted transfer can resume.
    package struct Open: Codable, Equatable, Sendable {
        package var kind: ChannelKind
        package var path: String
        package var size: UInt64
        package var key: String
        /// The file's modification time, nanoseconds since 1970 (UTC): applied by a receiver that
        /// lists `dates`, ignored by an older one (an unknown key).
        package var modified: UInt64? = nil

        package init(kind: ChannelKind, path: String, size: UInt64, key: String, modified: UInt64? = nil) {
            self.kind = kind
            self.path = path
            self.size = size
            self.key = key
            self.modified = modified
        }
    }

    /// The receiver's answer: how much of it is already here (a partial file from an interrupted
    /// transfer) and the SHA-256 of those bytes, or a refusal.
    package struct OpenReply: Codable, Equatable, Sendable {
        package var accept: Bool
        package var offset: UInt64
        package var prefixSHA256: String?
        package var reason: String?
        /// Why it was refused, for programs: `no-save-dir` (the node takes no files), `io-error`.
        package var code: TransferCode?
        /// Only to a sender whose hello lists `there`: the receiver holds a complete regular file
        /// of the offered size (`held`, its size) at the offered name, and its SHA-256 (hex). The
        /// sender hashes its own file and, when they are equal, sends no data (`Close.alreadyThere`).
        package var held: UInt64? = nil
        package var heldSHA256: String? = nil
        /// Only to an opener whose hello lists `waits`, on a stream nobody listens for yet: not an
        /// answer but "no listener; held this many seconds for one" — the answer comes later.
        package var waiting: UInt64? = nil

        package init(accept: Bool, offset: UInt64, prefixSHA256: String? = nil, reason: String? = nil, code: TransferCode? = nil, held: UInt64? = nil, heldSHA256: String? = nil, waiting: UInt64? = nil) {
            self.waiting = waiting
            self.accept = accept
            self.offset = offset
            self.prefixSHA256 = prefixSHA256
            self.reason = reason
            self.code = code
            self.held = held
            self.heldSHA256 = heldSHA256
        }
    }

    /// The sender's decision: where the data starts (the offered offset when the prefix matches its
    /// file, else 0).
    package struct Start: Codable, Equatable, Sendable {
        package var offset: UInt64

        package init(offset: UInt64) {
            self.offset = offset
        }
    }

    /// The end of a channel's data: the sender's SHA-256 of the whole file. The receiver answers with
    /// its own `close` (same hash: the file is in place) or a `reset`.
    package struct Close: Codable, Equatable, Sendable {
        package var sha256: String
        package var bytes: UInt64
        /// The receiver's confirming close: it had this file already (same name and SHA-256) and
        /// kept that copy instead of making another. The sender's close, without `start` or data
        /// before it: the receiver's `heldSHA256` is this file's, so nothing is sent.
        package var alreadyThere: Bool? = nil
        /// The receiver's confirming close only: the name it saved the file under, when not the one
        /// offered (`x (1).txt` beside another `x.txt`). A peer's words: bounded and checked by the
        /// sender (`Close.savedName`).
        package var savedAs: String? = nil

        package init(sha256: String, bytes: UInt64, alreadyThere: Bool? = nil, savedAs: String? = nil) {
            self.sha256 = sha256
            self.bytes = bytes
            self.alreadyThere = alreadyThere
            self.savedAs = savedAs
        }

        /// `savedAs` when it is a plain file name of sane length that differs from `offered`'s.
        package func savedName(offered: String) -> String? {
            guard let savedAs, !savedAs.isEmpty, savedAs.utf8.count <= 255, !savedAs.contains("/"),
                  savedAs != offered.split(separator: "/").last.map(String.init) else { return nil }
            return savedAs
        }
    }

    package struct Reset: Codable, Equatable, Sendable {
        package var reason: String
        package var code: TransferCode

        package init(reason: String, code: TransferCode) {
            self.reason = reason
            self.code = code
        }
    }

    package static let maxContextBytes = 4096
    package static let maxReasonBytes = 256

    package static func frame(_ kind: Frame.Kind, _ body: some Encodable) -> Frame {
        if let direct = body as? any DirectFrameJSON { return Frame(kind: kind, payload: ByteBuffer(string: direct.json)) }
        let data = (try? JSONEncoder().encode(body)) ?? Data("{}".utf8)
        return Frame(kind: kind, payload: ByteBuffer(bytes: data))
    }
}

extension FrameBody {
    package static func frame(_ kind: Frame.Kind, _ body: some Encodable, channel: UInt32) -> Frame {
        var frame = frame(kind, body)
        frame.channel = channel
        return frame
    }
}

/// A frame body that writes its own JSON (the file protocol's, in Transfer/FileFramesJSON.swift:
/// JSONEncoder was a noticeable share of a small file's CPU); `FrameBody.frame` uses it when there.
protocol DirectFrameJSON {
    var json: String { get }
}
