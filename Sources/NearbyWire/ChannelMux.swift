import NIOCore
import NearbyBase

/// The channels of one link (files and streams on IDs above 0), as a pure state machine: which
/// exist, who opened them, and how many bytes the peer may still send on each. Frames go in and are
/// either delivered, ignored (late frames for a channel that just ended) or refused; a peer that
/// breaks a rule — data before its channel was accepted, past the window we granted, on a channel
/// that never existed, an open over the cap — gets a `ProtocolViolation` or a refusal, and nothing
/// is ever buffered beyond a window. Modelled on swift-nio-ssh's channel multiplexer and window
/// manager.
package struct ChannelMux: Sendable {
    package struct Limits: Sendable, Equatable {
        /// Channels open at once on one link, both directions together.
        package var channels: Int
        /// Bytes the peer may send on a channel before we grant more.
        package var window: Int

        package init(channels: Int = 64, window: Int = ChannelMux.defaultWindow) {
            self.channels = channels
            self.window = window
        }
    }

    package enum Phase: Sendable, Equatable {
        /// We sent `open` and wait for the peer's reply.
        case opening
        /// The peer sent `open`: nothing may flow until we accept.
        case offered
        case open
    }

    struct Entry: Sendable, Equatable {
        var phase: Phase
        /// Bytes the peer may still send before we grant more.
        var allowance: Int
        /// Bytes consumed since the last window grant.
        var consumed: Int
        /// The peer ended its direction (`close`): nothing more may come from it.
        var peerClosed = false
    }

    package enum Inbound: Sendable, Equatable {
        case deliver
        /// A frame for a channel that has ended (its last window credits, data in flight when we
        /// reset it): dropped, and no reason to end the link.
        case ignore
        /// An open we refuse without making anything for it (over the cap): send this answer.
        case refuse(Frame)
    }

    /// The window each side grants when a channel opens (docs/protocol.md). 8 MiB: with 4 MiB a
    /// file transfer waited for credit on the lab link.
    package static let defaultWindow = 8 << 20
    /// The most a data frame carries (`Transfer.chunk`): a sender's pieces, cut by `Link.sendData`.
    /// 512 KiB, a whole read of a file or of stdin in one frame: half the frames of 256 KiB, so half
    /// the headers (each a TLS record of its own), writes through the pipeline, and pieces the
    /// receiver's link, stream and writer hand on. Every receiver takes data frames of up to 1 MiB
    /// (`Frame.maxPayload`), so nothing changes for a peer.
    package static let chunk = 512 << 10

    package let limits: Limits
    private let isClient: Bool
    private(set) var entries: [UInt32: Entry] = [:]
    private var nextOwn: UInt32
    private var highestPeer: UInt32 = 0

    /// The side that opened the connection numbers its channels odd, the other even.
    package init(isClient: Bool, limits: Limits = Limits()) {
        self.isClient = isClient
        self.limits = limits
        nextOwn = isClient ? 1 : 2
    }

    package func isOurs(_ id: UInt32) -> Bool { (id % 2 == 1) == isClient }
    package var count: Int { entries.count }
    package func phase(of id: UInt32) -> Phase? { entries[id]?.phase }

    /// Opens a channel of ours: its ID, or nil at the cap.
    package mutating func open() -> UInt32? {
        guard entries.count < limits.channels else { return nil }
        let id = nextOwn
        nextOwn += 2
        entries[id] = Entry(phase: .opening, allowance: 0, consumed: 0)
        return id
    }

    /// We accept the peer's offer: data may flow, up to a window.
    package mutating func accept(_ id: UInt32) {
        guard var entry = entries[id], entry.phase == .offered else { return }
        entry.phase = .open
        entry.allowance = limits.window
        entries[id] = entry
    }

    /// The channel is over (done, refused, reset): later frames on it are ignored.
    package mutating func finish(_ id: UInt32) { entries[id] = nil }

    /// `count` bytes of the peer's data were consumed (written to disk, taken by a reader). Returns
    /// the window frame to send once enough has been consumed to be worth one — a quarter window.
    package mutating func consumed(_ id: UInt32, _ count: Int) -> Frame? {
        guard var entry = entries[id] else { return nil }
        entry.consumed += count
        defer { entries[id] = entry }
        guard entry.consumed >= limits.window / 4 else { return nil }
        let grant = entry.consumed
        entry.allowance += grant
        entry.consumed = 0
        var payload = ByteBuffer()
        payload.writeInteger(UInt32(grant))
        return Frame(kind: .window, channel: id, payload: payload)
    }

    /// Checks a frame on a channel above 0 against the rules.
    package mutating func receive(_ id: UInt32, _ message: ChannelMessage) throws(ProtocolViolation) -> Inbound {
        guard id != 0 else { throw .unexpected("\(message.kind) frame on channel 0") }
        if case .open = message {
            guard !isOurs(id), id > highestPeer else { throw .unexpected("open on channel \(id), which is not the peer's next") }
            highestPeer = id
            guard entries.count < limits.channels else {
                return .refuse(FrameBody.frame(.openReply, FrameBody.OpenReply(
                    accept: false, offset: 0, prefixSHA256: nil,
                    reason: "too many channels open on this session (at most \(limits.channels))"), channel: id))
            }
            entries[id] = Entry(phase: .offered, allowance: 0, consumed: 0)
            return .deliver
        }
        guard var entry = entries[id] else {
            let existed = isOurs(id) ? id < nextOwn : id <= highestPeer
            guard existed else { throw .unexpected("\(message.kind) on channel \(id), which was never opened") }
            return .ignore
        }
        switch message {
        case let .openReply(reply):
            guard isOurs(id), entry.phase == .opening else { throw .unexpected("an answer on channel \(id), which we did not open") }
            // "Not yet" (a stream held for a listener): the answer is still to come.
            if reply.waiting != nil, !reply.accept { return .deliver }
            entry.phase = .open
            entry.allowance = limits.window
        case .start:
            guard !isOurs(id), entry.phase == .open else { throw .unexpected("start on channel \(id) before it was accepted") }
        case let .data(bytes):
            guard entry.phase == .open else { throw .unexpected("data on channel \(id) before it was accepted") }
            guard !entry.peerClosed else { throw .unexpected("data on channel \(id) after the peer closed it") }
            let count = bytes.readableBytes
            guard count <= entry.allowance else {
                throw .unexpected("\(count) bytes on channel \(id) past the window (\(entry.allowance) left)")
            }
            entry.allowance -= count
        case .window:
            break  // four bytes, checked where it was decoded (WireMessage)
        case .close:
            guard !entry.peerClosed else { throw .unexpected("a second close on channel \(id)") }
            entry.peerClosed = true
        case .reset:
            entries[id] = nil
            return .deliver
        case .open:
            throw .unexpected("open frame on channel \(id)")  // handled above
        }
        entries[id] = entry
        return .deliver
    }
}
