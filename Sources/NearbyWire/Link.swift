import Foundation
import NIOCore
import Synchronization
import NearbyBase

/// One authenticated connection to a peer and everything that lives on it: the write side, where it
/// is in the session protocol (`session`), its channels and what runs on them (`channels`), its
/// datagram state, and the time anything was last heard (for keepalives). It runs itself, from the
/// preamble to its `CloseReason` (`Link.run(connection:)`: handshake, frame loop, keepalive, answers
/// and channels); the node hears only what spans links (`LinkOwner`) and asks only for intentions
/// (invite, answer, leave, offer or accept a channel, send messages: Link+Intentions.swift), so its
/// channels, writer, transport and shortcut are touched only in the Link*.swift files. Dropping the
/// link drops all it owned.
package final class Link: Sendable, Hashable {
    package let peer: AuthenticatedPeer
    package let isClient: Bool
    let outbound: NIOAsyncChannelOutboundWriter<Frame>
    let transport: any Channel
    let shortcut: MessageShortcut
    /// The node that runs the link (`Link.run`), which its steps report to (`perform`).
    let owner: any LinkOwner
    /// The place an incoming link holds among links that are not sessions (`Admission`).
    let admission: Admission.Ticket?
    /// Where the link is in the session protocol.
    let session: Locked<SessionStateMachine>
    /// Files and streams on channels above 0.
    let channels: LinkChannels
    /// What the link holds of the process's `ResourceBudget` (the files its peer made us open).
    package let account: ResourceBudget.Account
    /// Its unreliable messages: its tag, where to send, sends waiting for the peer's setup (`DatagramHub`).
    let datagrams = Locked(LinkDatagrams())
    /// `--auto-accept` answered its invitation: its peer is pinned as a stranger when it connects.
    private let autoAccepted = Locked(false)
    /// Completed when the node has forgotten the link (`markDetached`): what a leaving node waits for.
    private let detachedPromise: EventLoopPromise<Void>
    private let lastHeard = Locked(ContinuousClock.now)
    private let reason = Locked<CloseReason?>(nil)
    /// A ping or pong written and not yet sent: the next waits for it (`send`).
    private let keepaliveUnsent = Atomic(false)
    /// No older link of the peer is left to wait for before its offers (`Node.handOver`).
    package let handedOver = Atomic(false)

    init(
        peer: AuthenticatedPeer, isClient: Bool, outbound: NIOAsyncChannelOutboundWriter<Frame>, transport: any Channel,
        shortcut: MessageShortcut, owner: any LinkOwner, admission: Admission.Ticket? = nil, budget: ResourceBudget = .shared
    ) {
        self.peer = peer
        self.owner = owner
        self.admission = admission
        detachedPromise = transport.eventLoop.makePromise(of: Void.self)
        self.isClient = isClient
        self.outbound = outbound
        self.transport = transport
        self.shortcut = shortcut
        session = Locked(SessionStateMachine(inbound: !isClient))
        channels = LinkChannels(isClient: isClient)
        account = budget.account()
    }

    /// Takes one step of the session protocol.
    func step(_ body: (inout SessionStateMachine) -> [SessionStateMachine.Action]) -> [SessionStateMachine.Action] {
        session.withLock { body(&$0) }
    }

    package var state: SessionStateMachine.State { session.withLock { $0.state } }

    /// A new channel of ours running what `make` gives it, within the link's cap.
    func openChannel<Made: Sendable>(_ make: (UInt32) -> (LinkChannels.End, Made)) throws(NearbyError) -> Made {
        guard let made = channels.open(make) else {
            // The connection ended (`Link.run` dropped its channels) before the node detached it.
            if channels.isDropped { throw .connectionFailed("the session with \(peer.id) ended") }
            throw .connectionFailed("too many channels open with \(peer.id) (at most \(ChannelMux.Limits().channels))")
        }
        return made
    }

    /// Returns window to the peer for `count` bytes of its data on `channel` we consumed, when worth a frame.
    package func consumed(_ count: Int, on channel: UInt32) async {
        if let grant = channels.consumed(channel, count) { await send(grant) }
    }

    package func heard() { lastHeard.withLock { $0 = .now } }

    package func markAutoAccepted() { autoAccepted.withLock { $0 = true } }

    /// Whether `--auto-accept` let this link in (asked once, when its peer is pinned).
    func takeAutoAccepted() -> Bool {
        autoAccepted.withLock { accepted in
            defer { accepted = false }
            return accepted
        }
    }

    package func markDetached() { detachedPromise.succeed(()) }

    /// Waits until every link in `targets` is detached, or `deadline`.
    package static func untilDetached(_ targets: [Link], by deadline: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            for link in targets { group.addTask { _ = await link.detached(by: deadline) } }
        }
    }

    /// True once the node has forgotten the link, false at `deadline` or when the caller is cancelled.
    package func detached(by deadline: ContinuousClock.Instant) async -> Bool {
        let future = detachedPromise.futureResult
        return await firstResult(until: deadline) { (try? await future.value()) != nil } ?? false
    }
    package var silence: Duration { lastHeard.withLock { ContinuousClock.now - $0 } }

    /// Why the link ended, as the first one to know said it (`CloseReason.settled`: a goodbye read
    /// after a write broke still says the peer left).
    func setReason(_ why: CloseReason) { reason.withLock { $0 = CloseReason.settled($0, then: why) } }
    /// Why the link ended; nil while it is open.
    package var closeReason: CloseReason? { reason.withLock { $0 } }
    /// Whether the link is closing or closed (someone gave a reason).
    package var isClosing: Bool { closeReason != nil }

    package func send(_ frame: Frame) async {
        // Keepalives skip the queue: behind a flood of messages that the peer reads slowly (the
        // writer waits for room), a pong that waited too would make the peer think us gone.
        if frame.kind == .ping || frame.kind == .pong {
            // One at a time: a peer that sends pings and reads nothing would have the node hold
            // every pong (each flush a buffer of its own: 20 links × 5,000 pings held 230 MB), and
            // one that reads hears the keepalive already waiting.
            guard !keepaliveUnsent.exchange(true, ordering: .acquiringAndReleasing) else { return }
            let sent = transport.eventLoop.makePromise(of: Void.self)
            sent.futureResult.whenComplete { [self] _ in keepaliveUnsent.store(false, ordering: .releasing) }
            transport.writeAndFlush(frame, promise: sent)
            return
        }
        do {
            try await outbound.write(frame)
        } catch is CancellationError {
            return  // the sending task was cancelled; the link itself is fine
        } catch {
            close(because: .sendFailed)
        }
    }

    /// `count` bytes of `chunk` as data frames of at most `ChannelMux.chunk` each, written together:
    /// they leave in one flush, one `writev` of TLS records, rather than a write and a wake-up each.
    package func sendData(_ chunk: inout ByteBuffer, count: Int, on channel: UInt32) async {
        var frames: [Frame] = []
        var left = count
        while left > 0, let piece = chunk.readSlice(length: min(left, ChannelMux.chunk)) {
            frames.append(Frame(kind: .data, channel: channel, payload: piece))
            left -= piece.readableBytes
        }
        await send(contentsOf: frames)
    }

    /// Frames written together: one flush (a small file's start, data and close).
    package func send(contentsOf frames: [Frame]) async {
        do {
            try await outbound.write(contentsOf: frames)
        } catch is CancellationError {
            return
        } catch {
            close(because: .sendFailed)
        }
    }

    /// Half-closes once everything queued is written (a goodbye or answer last); the peer closes its
    /// side when it reads that. A peer that does not is cut off after `goodbyeGrace`.
    func finish(because why: CloseReason) async {
        setReason(why)
        // A last ping as the barrier: it completes once everything queued before it is written.
        await flushed(transport, Frame(kind: .ping), within: .milliseconds(500))
        outbound.finish()
        let transport = self.transport
        transport.eventLoop.scheduleTask(in: Self.goodbyeGrace) { transport.close(promise: nil) }
    }

    static let goodbyeGrace = TimeAmount.seconds(3)

    package func close(because why: CloseReason) {
        setReason(why)
        transport.close(promise: nil)
    }

    package static func == (lhs: Link, rhs: Link) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Sends pings and cuts a link that has been silent too long: a peer that vanished (SIGKILL, cable
/// pulled) is reported `disconnected` within `silenceLimit` plus one `interval`.
enum Keepalive {
    static let interval = Duration.seconds(1)
    /// How long a link may stay silent before it is taken for lost: 6 s, or
    /// `NEARBY_SILENCE_LIMIT` seconds (for tests on a loaded machine, which may not run a keepalive
    /// for seconds; whole seconds, as the reason says them).
    static let silenceLimit: Duration = {
        let limit = Duration.seconds(parsing: ProcessInfo.processInfo.environment["NEARBY_SILENCE_LIMIT"]) ?? .seconds(6)
        return .seconds(max(limit.components.seconds, 1))
    }()

    static func run(_ link: Link) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            // Silence while we hold the link's reads (its output waits) is ours, not the peer's.
            switch SessionStateMachine.keepalive(silence: link.shortcut.pacing.silence(link.silence), limit: silenceLimit) {
            case let .send(frame): await link.send(frame)
            case let .close(reason): link.close(because: .ended(reason)); return
            default: return
            }
        }
    }
}
