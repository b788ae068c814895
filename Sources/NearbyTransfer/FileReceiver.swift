import Crypto
import Foundation
import NIOCore
import NearbyBase
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file arriving on one channel: written to a hidden partial file beside its destination, hashed
/// as it comes, put in place under a name that overwrites nothing once the sender's SHA-256
/// matches. The link's channel table owns it (`LinkChannels`); its frames come one after another
/// from the link's task (`received`), and it charges what it holds to the link's account (its
/// descriptor) and to the node's `PartialFiles` (a stranger's partial). Where it is in the protocol
/// is `machine` (`FileReceiveMachine`).
package final class FileReceiver: ChannelEnd {
    /// What an interrupted transfer of the same file left on disk: its length and hash so far.
    /// Immutable once made (the hasher is a value, copied on use).
    package final class Resume: @unchecked Sendable {
        package let bytes: UInt64
        package let hasher: SHA256
        init(bytes: UInt64, hasher: SHA256) {
            self.bytes = bytes
            self.hasher = hasher
        }
    }

    package struct Progress: Sendable {
        package var machine: FileReceiveMachine
        /// Set once the sender starts: writes and hashes what arrives, off the event loop.
        var writer: FileWriter?
        var started = ContinuousClock.now
        var pacer = ProgressPacer(since: .now)
        /// The bytes the last `progress` event said: the one at the end is not said twice.
        var reported: UInt64 = 0
    }

    let transfer: String
    let channel: UInt32
    let peer: PeerRef
    let relative: String
    let directory: String
    let name: String
    package let partial: String
    let size: UInt64
    package let resume: Resume?
    /// From a peer `--auto-accept` let in: its partial counts against the quota (`PartialFiles`).
    let stranger: Bool
    /// The sender's modification time (nanoseconds since 1970), given to the file before it is placed.
    let modified: UInt64?
    package let progress: Locked<Progress>
    let services: Services

    /// Our answer to the offer, taking it: where it resumes (the prefix kept, and its hash for the
    /// sender to check) and, to a sender that compares, the hash of the complete copy already here.
    var yes: FrameBody.OpenReply {
        let held = progress.withLock { $0.machine.held }
        return FrameBody.OpenReply(
            accept: true, offset: resume?.bytes ?? 0, prefixSHA256: resume.map { Transfer.hex($0.hasher.finalize()) }, reason: nil,
            held: held.map { _ in size }, heldSHA256: held)
    }

    /// What a receiver needs of the node that spans links.
    package struct Services: Sendable {
        let events: any EventSink
        let partials: PartialFiles
        /// The save directory (the directories a stranger's path makes are counted below it).
        let root: String?
        /// Runs work as a child of the node (the quota stopping a transfer).
        let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void
        /// The peer broke the protocol: an event says so and the link is cut.
        let violated: @Sendable (String) -> Void

        package init(
            events: any EventSink, partials: PartialFiles, root: String?,
            spawn: @escaping @Sendable (@escaping @Sendable () async -> Void) -> Void, violated: @escaping @Sendable (String) -> Void
        ) {
            self.events = events
            self.partials = partials
            self.root = root
            self.spawn = spawn
            self.violated = violated
        }
    }

    package init(
        transfer: String, channel: UInt32, peer: PeerRef, relative: String, directory: String, name: String, partial: String,
        size: UInt64, resume: Resume?, held: String? = nil, stranger: Bool = false, modified: UInt64? = nil, services: Services
    ) {
        self.services = services
        self.stranger = stranger
        self.modified = modified
        self.transfer = transfer
        self.channel = channel
        self.peer = peer
        self.relative = relative
        self.directory = directory
        self.name = name
        self.partial = partial
        self.size = size
        self.resume = resume
        progress = Locked(Progress(machine: FileReceiveMachine(size: size, resumable: resume?.bytes ?? 0, held: held)))
    }

    var position: UInt64 { progress.withLock { $0.machine.position } }

    /// Whether `name` is the partial file of a stranger (`partialName` with `stranger`).
    static func isStrangersPartial(_ name: String) -> Bool {
        let suffix = ".nearby-part"
        guard name.hasPrefix("."), name.hasSuffix(suffix) else { return false }
        let stem = name.dropLast(suffix.count)
        guard let dot = stem.lastIndex(of: ".") else { return false }
        let digest = stem[stem.index(after: dot)...]
        return digest.hasPrefix("s-") && digest.dropFirst(2).prefix(32).allSatisfy(\.isHexDigit) && digest.count >= 34
    }
}

/// Driving the file: the sender's start, data and close, a reset, the link lost.
extension FileReceiver {
    /// A frame of the peer on this channel, from the link's task.
    package func received(_ message: ChannelMessage, on link: any ChannelPort) async throws(ProtocolViolation) {
        switch message {
        case let .start(start): await self.start(start, on: link)
        case let .data(bytes): await data(bytes, on: link)
        case let .close(close): await end(close, on: link)
        case let .reset(reset): peerReset(reset)
        case .open, .openReply, .window: throw .unexpected("\(message.kind) on the peer's channel \(channel)")
        }
    }

    /// What an interrupted transfer of the same file left, offered for resuming. Reading it takes a
    /// descriptor for a moment, charged to the link: with none to spare, the file starts over. Read
    /// and hashed on NIO's thread pool (`Blocking`); a cancelled caller stops it at the next block.
    package static func resumable(_ partial: String, upTo size: UInt64, charging account: ResourceBudget.Account) async -> Resume? {
        // Mostly there is none (a new file): known from one lstat, without a descriptor or a hop to
        // the pool — a folder's thousands of offers each cost one syscall on the link's task.
        var info = stat()
        guard lstat(partial, &info) == 0 || errno != ENOENT else { return nil }
        guard case let .success(charge) = account.takeFile() else { return nil }
        defer { charge.release() }
        return try? await Blocking.run { cancellation -> Resume? in
            let existing = open(partial, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard existing >= 0 else { return nil }
            defer { close(existing) }
            var stats = stat()
            let bytes = fstat(existing, &stats) == 0 ? UInt64(max(0, stats.st_size)) : 0
            var prefix = SHA256()
            guard bytes > 0, bytes <= size, Transfer.hash(existing, count: bytes, into: &prefix, cancellation: cancellation) else { return nil }
            return Resume(bytes: bytes, hasher: prefix)
        }
    }

    func start(_ start: FrameBody.Start, on link: any ChannelPort) async {
        let resumed: Bool
        do {
            resumed = try progress.withLock { (progress: inout Progress) throws(FileReceiveMachine.Illegal) -> Bool in
                try progress.machine.start(at: start.offset)
            }
        } catch {
            services.violated("a start that does not match the offer on channel \(channel) (\(error))")
            return
        }
        // The descriptor is charged to the link before it is opened: over the budget, this channel
        // is refused with the reason, never an EMFILE somewhere else in the process.
        let charge: ResourceBudget.Charge
        switch link.account.takeFile() {
        case let .success(taken): charge = taken
        case let .failure(refusal): return await fail(on: link, code: .busy, reason: "\(refusal)")
        }
        // A resume continues the very partial the offer hashed, never a new one: should it have gone
        // since (the quota, its lifetime), the hash carried on would vouch for bytes not there. The
        // directory is made only when the partial cannot be opened for want of it: a folder's files
        // after its first find it there.
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (resumed ? 0 : O_CREAT | O_TRUNC)
        var descriptor = open(partial, flags, 0o600)
        if descriptor < 0, errno == ENOENT, !resumed {
            do {
                if stranger, let root = services.root {
                    try services.partials.makeDirectories(directory, below: root)
                } else {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                }
            } catch {
                charge.release()
                let why = (error as? NearbyError)?.errorDescription ?? error.localizedDescription
                return await fail(on: link, code: .ioError, reason: "cannot create \(directory): \(why)")
            }
            descriptor = open(partial, flags, 0o600)
        }
        guard descriptor >= 0 else {
            let failure = errno
            charge.release()
            if resumed, failure == ENOENT {
                return await fail(on: link, code: .quota, reason: "the unfinished file to resume was deleted meanwhile; send it again")
            }
            return await fail(on: link, code: .ioError, reason: "cannot write in \(directory): \(Transfer.errorText(failure))")
        }
        var hasher = SHA256()
        if resumed, let resume = resume {
            var info = stat()
            guard fstat(descriptor, &info) == 0, UInt64(max(0, info.st_size)) >= resume.bytes else {
                Transfer.closeDescriptor(descriptor)
                charge.release()
                return await fail(on: link, code: .quota, reason: "the unfinished file to resume was cut meanwhile; send it again")
            }
            hasher = resume.hasher
        }
        let writer = FileWriter(descriptor: descriptor, hasher: hasher, charge: charge, inline: size <= FileWriter.inlineBytes)
        let skipped = progress.withLock { progress in
            progress.writer = writer
            progress.started = .now
            progress.pacer = ProgressPacer(since: .now)
            return progress.machine.skipped
        }
        if stranger {
            // Counted against the quota on strangers' partials, which may take it back while written.
            services.partials.begin(partial, owner: peer.id, bytes: resumed ? resume?.bytes ?? 0 : 0) { [self] in
                // Its descriptor closed at once: the deleted file's blocks are free now.
                progress.withLock { $0.writer }?.stop()
                services.spawn { [self] in
                    // Only while it is still being written: a channel that ended may not be reset.
                    guard progress.withLock({ $0.writer != nil }) else { return }
                    await self.fail(on: link, code: .quota, reason: "the node's room for unfinished files from peers it does not know is full")
                }
            }
        }
        services.events.emit(Events.FileStarted(transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: size, skipped: skipped))
    }

    func data(_ bytes: ByteBuffer, on link: any ChannelPort) async {
        let count = bytes.readableBytes
        let step = progress.withLock { progress -> Result<(FileWriter, UInt64), FileReceiveMachine.Illegal> in
            do throws(FileReceiveMachine.Illegal) {
                let at = try progress.machine.data(count)
                guard let writer = progress.writer else { return .failure(.dataBeforeStart) }
                return .success((writer, at))
            } catch {
                return .failure(error)
            }
        }
        let writer: FileWriter, at: UInt64
        switch step {
        case let .success(next): (writer, at) = next
        case .failure(.pastEnd):
            return await fail(on: link, code: .protocolBroken, reason: "the sender sent more than the \(size) bytes it announced")
        case .failure(.afterEnd):
            // A bundle's file that this side gave up on while its bytes were on the way (a file
            // channel's are dropped by the multiplexer once it is reset).
            return
        case let .failure(illegal):
            return services.violated("\(illegal) on channel \(channel)")
        }
        let failure = await writer.write(bytes, at: at)
        if failure != 0 { return await failed(on: link, writing: failure) }
        if stranger { services.partials.grew(partial, by: count) }
        await link.consumed(count, on: channel)
        let due = progress.withLock { progress -> (UInt64, UInt64, ContinuousClock.Instant)? in
            guard progress.pacer.due() else { return nil }
            progress.reported = progress.machine.position
            return (progress.machine.position, progress.machine.skipped, progress.started)
        }
        if let (position, skipped, started) = due {
            services.events.emit(Events.Progress(
                transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: position,
                total: size, rate: Transfer.rate(position - skipped, Transfer.seconds(since: started))))
        }
    }

    /// The sender stopped (a `reset`, which already ended the channel): what arrived stays for a resume.
    func peerReset(_ reset: FrameBody.Reset) {
        abandon(code: reset.code, reason: "the sender stopped: \(String(reset.reason.prefix(FrameBody.maxReasonBytes)))", keepPartial: true)
    }

    /// A write failed (the disk is full, an I/O error).
    func failed(on link: any ChannelPort, writing failure: Int32) async {
        // A stranger's writer stopped by the quota (`FileWriter.stop`), its failure seen first here.
        if failure == ECANCELED, stranger {
            return await fail(on: link, code: .quota, reason: "the node's room for unfinished files from peers it does not know is full")
        }
        let reason = failure == ENOSPC ? "the disk is full" : Transfer.errorText(failure)
        await fail(on: link, code: .ioError, reason: "cannot write \(relative): \(reason)")
    }

    /// The receiver gives up on a file (damaged, too long, disk full): nothing is kept, the sender
    /// hears why.
    func fail(on link: any ChannelPort, code: TransferCode, reason: String) async {
        link.endChannel(channel)
        abandon(code: code, reason: reason, keepPartial: false)
        await link.reset(FrameBody.Reset(reason: reason, code: code), on: channel)
    }

    /// Gives up on an incoming file: nothing under its final name; the partial file kept for a resume
    /// when the interruption was not the data's fault and something arrived. Once: a file that has
    /// ended already is left alone.
    /// The link went: the partial file stays for a resume. Our own leaving (Ctrl-C here,
    /// `disconnect`) is a cancel; anything else, the peer vanished.
    package func linkEnded(_ reason: CloseReason) {
        reason.isOurLeaving
            ? abandon(code: .cancelled, reason: "cancelled here (\(reason))", keepPartial: true)
            : abandon(code: .connectionLost, reason: "the peer vanished mid-transfer (\(reason))", keepPartial: true)
    }

    func abandon(code: TransferCode, reason: String, keepPartial: Bool) {
        let ended = progress.withLock { progress -> (writer: FileWriter?, position: UInt64)? in
            let position = progress.machine.position
            guard progress.machine.reset() else { return nil }
            defer { progress.writer = nil }
            return (progress.writer, position)
        }
        guard let (writer, position) = ended else { return }
        writer?.close()
        if writer != nil {
            if !keepPartial || position == 0 {
                unlink(partial)
                services.partials.gone(partial, deleted: true)
            } else {
                services.partials.idle(partial)
            }
        }
        services.partials.release(partial)
        services.events.emit(Events.FileFailed(
            transfer: transfer, direction: "receive", peer: peer, path: relative, code: code.description, reason: reason,
            resumable: keepPartial && position > 0))
    }
}
