import Crypto
import Foundation
import Synchronization

/// What the receiver says about a file we send: answers, flow-control credit, the end.
final class OutgoingChannel: Sendable {
    enum Signal: Sendable {
        case reply(Control.OpenReply)
        case closed(Control.Close)
        case reset(Control.Reset)
        case lost(String)
    }

    let id: UInt32
    /// Answers and the end: a handful per channel (the multiplexer refuses repeats).
    let signals: AsyncStream<Signal>
    let continuation: AsyncStream<Signal>.Continuation
    /// What the receiver lets us send, summed however many window frames it sends.
    let credit = CreditGate(initial: Transfer.window)

    init(id: UInt32) {
        self.id = id
        (signals, continuation) = AsyncStream<Signal>.makeStream()
    }

    /// The link went: the sender stops waiting for credit or an answer.
    func lost(_ reason: String) {
        continuation.yield(.lost(reason))
        credit.close()
    }
}

/// A file arriving: written to a hidden partial file beside its destination, hashed as it comes,
/// put in place under a name that overwrites nothing once the sender's SHA-256 matches. Its frames
/// come one after another from its link's task; where it is in the protocol is `machine`.
final class IncomingFile: Sendable {
    /// What an interrupted transfer of the same file left on disk: its length and hash so far.
    /// Immutable once made (the hasher is a value, copied on use).
    final class Resume: @unchecked Sendable {
        let bytes: UInt64
        let hasher: SHA256
        init(bytes: UInt64, hasher: SHA256) {
            self.bytes = bytes
            self.hasher = hasher
        }
    }

    struct Progress: Sendable {
        var machine: FileReceiveMachine
        /// Set once the sender starts: writes and hashes what arrives, off the event loop.
        var writer: FileWriter?
        var started = ContinuousClock.now
        var lastProgress = ContinuousClock.now
    }

    let transfer: String
    let channel: UInt32
    let peer: PeerRef
    let relative: String
    let directory: String
    let name: String
    let partial: String
    let size: UInt64
    let resume: Resume?
    /// From a peer `--auto-accept` let in: its partial counts against the quota (`PartialFiles`).
    let stranger: Bool
    let progress: Mutex<Progress>

    init(
        transfer: String, channel: UInt32, peer: PeerRef, relative: String, directory: String, name: String, partial: String,
        size: UInt64, resume: Resume?, stranger: Bool = false
    ) {
        self.stranger = stranger
        self.transfer = transfer
        self.channel = channel
        self.peer = peer
        self.relative = relative
        self.directory = directory
        self.name = name
        self.partial = partial
        self.size = size
        self.resume = resume
        progress = Mutex(Progress(machine: FileReceiveMachine(size: size, resumable: resume?.bytes ?? 0)))
    }

    var position: UInt64 { progress.withLock { $0.machine.position } }

    /// The hidden name of the partial file for `name` from the peer `peer`, with the sender's `key`
    /// (and `alone` when the same file is already arriving on another channel): the name's first
    /// 64 bytes for people, then a digest of all three, so that any legal name keeps its partial
    /// under the file system's name limit (255 bytes) and a peer resumes only its own partials.
    static func partialName(of name: String, key: String, from peer: String, alone: String = "") -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(peer)\u{0}\(name)\u{0}\(key)".utf8))
        var shown = String.UnicodeScalarView()
        var bytes = 0
        for scalar in name.unicodeScalars {
            bytes += String(scalar).utf8.count
            if bytes > 64 { break }
            shown.append(scalar)
        }
        return ".\(String(shown)).\(Hex.encode(hasher.finalize()).prefix(32))\(alone).nearby-part"
    }
}
