import Foundation

/// Session events (docs/events.md).
extension Events {
    package struct Invitation: EventBody {
        package static let event = "invitation"
        package var invitation: String
        package var peer: PeerRef
        @Null package var context: String?
        package var verificationCode: String
        package var encrypted: Bool
        package var expires: String
        /// Who answers it at once (the `by` of the `accepted` that follows, or `nearby accept` for a
        /// waiting `--decline`); nil when it waits for an answer.
        package var answeredBy: String? = nil
        /// `localsend` for a LocalSend sender's transfer (`--localsend`); omitted for nearby peers.
        package var kind: String? = nil
        /// What the inviter offers (files, or a stream), when it says; omitted otherwise.
        package var offer: Offer? = nil

        package init(
            invitation: String, peer: PeerRef, context: String?, verificationCode: String, encrypted: Bool, expires: String,
            answeredBy: String? = nil, kind: String? = nil, offer: Offer? = nil
        ) {
            self.offer = offer
            self.invitation = invitation
            self.peer = peer
            self.context = context
            self.verificationCode = verificationCode
            self.encrypted = encrypted
            self.expires = expires
            self.answeredBy = answeredBy
            self.kind = kind
        }

        enum CodingKeys: String, CodingKey {
            case invitation, peer, context, encrypted, expires, kind, offer
            case verificationCode = "verification_code"
            case answeredBy = "answered_by"
        }
    }

    package struct Invited: EventBody {
        package static let event = "invited"
        package var invitation: String
        package var peer: PeerRef
        package var address: String
        package var verificationCode: String
        package var encrypted: Bool

        package init(invitation: String, peer: PeerRef, address: String, verificationCode: String, encrypted: Bool) {
            self.invitation = invitation
            self.peer = peer
            self.address = address
            self.verificationCode = verificationCode
            self.encrypted = encrypted
        }
        enum CodingKeys: String, CodingKey {
            case invitation, peer, address, encrypted
            case verificationCode = "verification_code"
        }
    }

    package struct Accepted: EventBody {
        package static let event = "accepted"
        package var invitation: String
        package var peer: PeerRef
        package var by: String
        /// `nearby accept` without a peer: how many other invitations still wait (omitted when none).
        package var pending: Int? = nil

        package init(invitation: String, peer: PeerRef, by: String, pending: Int? = nil) {
            self.invitation = invitation
            self.peer = peer
            self.by = by
            self.pending = pending
        }
    }

    package struct Declined: EventBody {
        package static let event = "declined"
        /// The reason of an invitation this node declined (its own event; the peer is told "declined").
        package static let byUs = "declined by us"
        package var invitation: String
        package var peer: PeerRef
        package var reason: String

        package init(invitation: String, peer: PeerRef, reason: String) {
            self.invitation = invitation
            self.peer = peer
            self.reason = reason
        }
    }

    package struct Connecting: EventBody {
        package static let event = "connecting"
        /// Nil when connecting to `HOST:PORT`: who is there is known after the handshake.
        @Null package var peer: PeerRef?
        package var address: String

        package init(peer: PeerRef? = nil, address: String) {
            self.peer = peer
            self.address = address
        }

        enum CodingKeys: String, CodingKey { case peer, address }
    }

    package struct Connected: EventBody {
        package static let event = "connected"
        package var peer: PeerRef
        package var address: String
        package var verificationCode: String
        package var encrypted: Bool
        package var peers: Int

        package init(peer: PeerRef, address: String, verificationCode: String, encrypted: Bool, peers: Int) {
            self.peer = peer
            self.address = address
            self.verificationCode = verificationCode
            self.encrypted = encrypted
            self.peers = peers
        }
        enum CodingKeys: String, CodingKey {
            case peer, address, encrypted, peers
            case verificationCode = "verification_code"
        }
    }

    package struct Disconnected: EventBody {
        package static let event = "disconnected"
        package var peer: PeerRef
        package var reason: String
        package var peers: Int

        package init(peer: PeerRef, reason: String, peers: Int) {
            self.peer = peer
            self.reason = reason
            self.peers = peers
        }
    }

    package struct Message: EventBody {
        package static let event = "message"
        package var peer: PeerRef
        package var text: String?
        package var data: String?
        package var bytes: Int

        /// False for `send --unreliable` datagrams.
        package var reliable = true

        package init(peer: PeerRef, text: String? = nil, data: String? = nil, bytes: Int, reliable: Bool = true) {
            self.peer = peer
            self.text = text
            self.data = data
            self.bytes = bytes
            self.reliable = reliable
        }
    }

    package struct Sent: EventBody {
        package static let event = "sent"
        package var peers: [PeerRef]
        package var bytes: Int
        package var reliable = true
        /// With `--lines`: how many messages (lines) this event reports; their bytes in all.
        package var messages: Int?

        package init(peers: [PeerRef], bytes: Int, reliable: Bool = true, messages: Int? = nil) {
            self.peers = peers
            self.bytes = bytes
            self.reliable = reliable
            self.messages = messages
        }
    }

    /// A connection we closed before it became a session: not nearby, incompatible, or failing the
    /// identity check.
    package struct Rejected: EventBody {
        package static let event = "rejected"
        package var address: String
        package var reason: String
        package var code: String

        package init(address: String, reason: String, code: String) {
            self.address = address
            self.reason = reason
            self.code = code
        }
    }

    package struct FileStarted: EventBody {
        package static let event = "file-started"
        package var transfer: String
        package var direction: String
        package var peer: PeerRef
        package var path: String
        package var bytes: UInt64
        package var skipped: UInt64
        /// false when the size is not known before the file has arrived (a browser's upload:
        /// `bytes` is then 0); omitted otherwise.
        package var sizeKnown: Bool?

        package init(transfer: String, direction: String, peer: PeerRef, path: String, bytes: UInt64, skipped: UInt64, sizeKnown: Bool? = nil) {
            self.transfer = transfer
            self.direction = direction
            self.peer = peer
            self.path = path
            self.bytes = bytes
            self.skipped = skipped
            self.sizeKnown = sizeKnown
        }
    }

    package struct Progress: EventBody {
        package static let event = "progress"
        package var transfer: String
        package var direction: String
        package var peer: PeerRef
        package var path: String
        package var bytes: UInt64
        package var total: UInt64
        package var rate: Double
        /// Sending several files: which one this is, and the whole batch so far (omitted for one).
        package var file: Int?
        package var files: Int?
        package var allBytes: UInt64?
        package var allTotal: UInt64?

        /// Where one file stands in a batch of several.
        package struct Batch: Sendable {
            /// 1-based.
            package var file: Int
            package var files: Int
            /// Bytes of the files before this one.
            package var before: UInt64
            package var total: UInt64

            package init(file: Int, files: Int, before: UInt64, total: UInt64) {
                self.file = file
                self.files = files
                self.before = before
                self.total = total
            }
        }

        enum CodingKeys: String, CodingKey {
            case transfer, direction, peer, path, bytes, total, rate, file, files
            case allBytes = "all_bytes"
            case allTotal = "all_total"
        }

        package init(
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
    package struct FileDone<End: FileEnd>: EventBody {
        package static var event: String { End.event }
        package var transfer: String
        package var peer: PeerRef
        /// Sent: the relative path. Received: where the file is — its new name, or the copy that
        /// was already there.
        package var path: String
        package var bytes: UInt64
        package var skipped: UInt64
        package var sha256: String
        package var seconds: Double
        /// The receiver had it already (same name and content) and kept that copy; omitted otherwise.
        package var alreadyThere: Bool? = nil
        /// Sent only: the file on this host (absolute), so files of the same name are told apart.
        package var source: String? = nil
        /// Sent only: the name the receiver saved it under, when not its own (`x (1).txt`).
        package var savedAs: String? = nil

        package init(transfer: String, peer: PeerRef, path: String, bytes: UInt64, skipped: UInt64, sha256: String, seconds: Double, alreadyThere: Bool? = nil, source: String? = nil, savedAs: String? = nil) {
            self.transfer = transfer
            self.peer = peer
            self.path = path
            self.bytes = bytes
            self.skipped = skipped
            self.sha256 = sha256
            self.seconds = seconds
            self.alreadyThere = alreadyThere
            self.source = source
            self.savedAs = savedAs
        }
        enum CodingKeys: String, CodingKey {
            case transfer, peer, path, bytes, skipped, sha256, seconds, source
            case alreadyThere = "already_there"
            case savedAs = "saved_as"
        }
    }

    package protocol FileEnd: Sendable { static var event: String { get } }
    package enum SendingEnd: FileEnd { package static let event = "file-sent" }
    package enum ReceivingEnd: FileEnd { package static let event = "file-received" }
    package typealias FileSent = FileDone<SendingEnd>
    package typealias FileReceived = FileDone<ReceivingEnd>

    /// An entry of a sent directory that is not sent (a FIFO, a device, a socket, a symbolic link).
    package struct Skipped: EventBody {
        package static let event = "skipped"
        package var path: String
        package var reason: String
        /// One another protocol's sender leaves out (LocalSend: an empty folder).
        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    package struct FileFailed: EventBody {
        package static let event = "file-failed"
        package var transfer: String
        package var direction: String
        package var peer: PeerRef
        package var path: String
        package var code: String
        package var reason: String
        /// Whether a partial file was kept, so sending the same file again resumes.
        package var resumable: Bool

        package init(transfer: String, direction: String, peer: PeerRef, path: String, code: String, reason: String, resumable: Bool) {
            self.transfer = transfer
            self.direction = direction
            self.peer = peer
            self.path = path
            self.code = code
            self.reason = reason
            self.resumable = resumable
        }
    }

    package struct StreamOpened: EventBody {
        package static let event = "stream-opened"
        package var stream: String
        package var direction: String
        package var peer: PeerRef
        package var name: String

        package init(stream: String, direction: String, peer: PeerRef, name: String) {
            self.stream = stream
            self.direction = direction
            self.peer = peer
            self.name = name
        }
    }

    package struct StreamClosed: EventBody {
        package static let event = "stream-closed"
        package var stream: String
        package var peer: PeerRef
        package var name: String
        package var sent: UInt64
        package var received: UInt64
        package var reason: String

        package init(stream: String, peer: PeerRef, name: String, sent: UInt64, received: UInt64, reason: String) {
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
    package init(_ bytes: [UInt8], from peer: PeerRef, reliable: Bool = true) {
        let text = String(validating: bytes, as: UTF8.self)
        self.init(peer: peer, text: text, data: text == nil ? Data(bytes).base64EncodedString() : nil, bytes: bytes.count, reliable: reliable)
    }
}
