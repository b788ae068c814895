import Foundation

/// Session events (docs/events.md).
extension Events {
    public struct Invitation: EventBody {
        public static let event = "invitation"
        public var invitation: String
        public var peer: PeerRef
        @Null public var context: String?
        public var verificationCode: String
        public var encrypted: Bool
        public var expires: String
        /// Who answers it at once (the `by` of the `accepted` that follows, or `nearby accept` for a
        /// waiting `--decline`); nil when it waits for an answer.
        public var answeredBy: String? = nil
        /// `localsend` for a LocalSend sender's transfer (`--localsend`); omitted for nearby peers.
        public var kind: String? = nil
        enum CodingKeys: String, CodingKey {
            case invitation, peer, context, encrypted, expires, kind
            case verificationCode = "verification_code"
            case answeredBy = "answered_by"
        }
    }

    public struct Invited: EventBody {
        public static let event = "invited"
        public var invitation: String
        public var peer: PeerRef
        public var address: String
        public var verificationCode: String
        public var encrypted: Bool
        enum CodingKeys: String, CodingKey {
            case invitation, peer, address, encrypted
            case verificationCode = "verification_code"
        }
    }

    public struct Accepted: EventBody {
        public static let event = "accepted"
        public var invitation: String
        public var peer: PeerRef
        public var by: String
        /// `nearby accept` without a peer: how many other invitations still wait (omitted when none).
        public var pending: Int? = nil
    }

    public struct Declined: EventBody {
        public static let event = "declined"
        public var invitation: String
        public var peer: PeerRef
        public var reason: String
    }

    public struct Connecting: EventBody {
        public static let event = "connecting"
        /// Nil when connecting to `HOST:PORT`: who is there is known after the handshake.
        @Null public var peer: PeerRef?
        public var address: String

        enum CodingKeys: String, CodingKey { case peer, address }
    }

    public struct Connected: EventBody {
        public static let event = "connected"
        public var peer: PeerRef
        public var address: String
        public var verificationCode: String
        public var encrypted: Bool
        public var peers: Int
        enum CodingKeys: String, CodingKey {
            case peer, address, encrypted, peers
            case verificationCode = "verification_code"
        }
    }

    public struct Disconnected: EventBody {
        public static let event = "disconnected"
        public var peer: PeerRef
        public var reason: String
        public var peers: Int
    }

    public struct Message: EventBody {
        public static let event = "message"
        public var peer: PeerRef
        public var text: String?
        public var data: String?
        public var bytes: Int
        /// False for `send --unreliable` datagrams.
        public var reliable = true
    }

    public struct Sent: EventBody {
        public static let event = "sent"
        public var peers: [PeerRef]
        public var bytes: Int
        public var reliable = true
        /// With `--lines`: how many messages (lines) this event reports; their bytes in all.
        public var messages: Int?
    }

    /// A connection we closed before it became a session: not nearby, incompatible, or failing the
    /// identity check.
    public struct Rejected: EventBody {
        public static let event = "rejected"
        public var address: String
        public var reason: String
        public var code: String
    }

    public struct FileStarted: EventBody {
        public static let event = "file-started"
        public var transfer: String
        public var direction: String
        public var peer: PeerRef
        public var path: String
        public var bytes: UInt64
        public var skipped: UInt64
    }

    public struct Progress: EventBody {
        public static let event = "progress"
        public var transfer: String
        public var direction: String
        public var peer: PeerRef
        public var path: String
        public var bytes: UInt64
        public var total: UInt64
        public var rate: Double
        /// Sending several files: which one this is, and the whole batch so far (omitted for one).
        public var file: Int?
        public var files: Int?
        public var allBytes: UInt64?
        public var allTotal: UInt64?

        /// Where one file stands in a batch of several.
        public struct Batch: Sendable {
            /// 1-based.
            public var file: Int
            public var files: Int
            /// Bytes of the files before this one.
            public var before: UInt64
            public var total: UInt64
        }

        enum CodingKeys: String, CodingKey {
            case transfer, direction, peer, path, bytes, total, rate, file, files
            case allBytes = "all_bytes"
            case allTotal = "all_total"
        }

        public init(
            transfer: String, direction: String, peer: PeerRef, path: String, bytes: UInt64, total: UInt64, rate: Double,
            batch: Batch? = nil, done: UInt64 = 0
        ) {
            self.transfer = transfer
            self.direction = direction
            self.peer = peer
            self.path = path
            self.bytes = bytes
            self.total = total
            self.rate = rate
            if let batch {
                file = batch.file
                files = batch.files
                allBytes = batch.before + done
                allTotal = batch.total
            }
        }
    }

    /// `file-sent` and `file-received`: the same facts, from either end.
    public struct FileDone<End: FileEnd>: EventBody {
        public static var event: String { End.event }
        public var transfer: String
        public var peer: PeerRef
        /// Sent: the relative path. Received: where the file is — its new name, or the copy that
        /// was already there.
        public var path: String
        public var bytes: UInt64
        public var skipped: UInt64
        public var sha256: String
        public var seconds: Double
        /// The receiver had it already (same name and content) and kept that copy; omitted otherwise.
        public var alreadyThere: Bool? = nil
        /// Sent only: the file on this host (absolute), so files of the same name are told apart.
        public var source: String? = nil
        /// Sent only: the name the receiver saved it under, when not its own (`x (1).txt`).
        public var savedAs: String? = nil
        enum CodingKeys: String, CodingKey {
            case transfer, peer, path, bytes, skipped, sha256, seconds, source
            case alreadyThere = "already_there"
            case savedAs = "saved_as"
        }
    }

    public protocol FileEnd: Sendable { static var event: String { get } }
    public enum SendingEnd: FileEnd { public static let event = "file-sent" }
    public enum ReceivingEnd: FileEnd { public static let event = "file-received" }
    public typealias FileSent = FileDone<SendingEnd>
    public typealias FileReceived = FileDone<ReceivingEnd>

    /// An entry of a sent directory that is not sent (a FIFO, a device, a socket, a symbolic link).
    public struct Skipped: EventBody {
        public static let event = "skipped"
        public var path: String
        public var reason: String
        public init(_ skipped: FileList.Skipped) {
            path = skipped.path
            reason = skipped.reason
        }
    }

    public struct FileFailed: EventBody {
        public static let event = "file-failed"
        public var transfer: String
        public var direction: String
        public var peer: PeerRef
        public var path: String
        public var code: String
        public var reason: String
        /// Whether a partial file was kept, so sending the same file again resumes.
        public var resumable: Bool
    }

    public struct StreamOpened: EventBody {
        public static let event = "stream-opened"
        public var stream: String
        public var direction: String
        public var peer: PeerRef
        public var name: String
    }

    public struct StreamClosed: EventBody {
        public static let event = "stream-closed"
        public var stream: String
        public var peer: PeerRef
        public var name: String
        public var sent: UInt64
        public var received: UInt64
        public var reason: String

        public init(stream: String, peer: PeerRef, name: String, sent: UInt64, received: UInt64, reason: String) {
            self.stream = stream
            self.peer = peer
            self.name = name
            self.sent = sent
            self.received = received
            self.reason = reason
        }
    }
}

extension Events.Message {
    /// A message as received: text when the bytes are UTF-8, base64 `data` when they are not.
    init(_ bytes: [UInt8], from peer: PeerRef, reliable: Bool = true) {
        let text = String(validating: bytes, as: UTF8.self)
        self.init(peer: peer, text: text, data: text == nil ? Data(bytes).base64EncodedString() : nil, bytes: bytes.count, reliable: reliable)
    }
}
