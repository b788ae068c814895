import Crypto
import Foundation
import NIOCore
import NIOPosix
import NearbyBase

/// A node's unreliable messages: its UDP sockets (one per address family, opened on first use), and
/// the receiving half of each session by its tag (keys and replay windows of `Datagram`): what
/// arrives on a shared socket is found by tag. What belongs to one link — its tag, where and how to
/// send to its peer, the sends waiting for the peer's setup — is the link's (`LinkDatagrams`). What fails to authenticate or comes
/// again is dropped and counted in a `datagrams-dropped` event (at most one a second). Only a
/// datagram that authenticated is ever said to be a peer's: a forged one carrying a session's tag
/// is reported by the address it came from.
package final class DatagramHub: Sendable {
    /// Keys as bytes: the state lives behind a lock, and plain bytes cross isolation domains.
    struct Sending {
        let key: [UInt8]
        let tag: UInt64
        let address: SocketAddress
        var sequence: UInt64 = 0
    }

    struct Receiving {
        let peer: PeerRef
        let ownKey: [UInt8]
        var peerKey: [UInt8]?
        var window = ReplayWindow()
    }

    struct State {
        var sockets: [Int32: any Channel] = [:]
        var receiving: [UInt64: Receiving] = [:]
        var dropped = 0
        var lastReason = ""
        var lastPeer: PeerRef?
        var lastAddress: String?
        var reportPending = false
        var closed = false
    }

    private let state = Locked(State())
    private let events: any EventSink

    package init(events: any EventSink) { self.events = events }

    // MARK: Setting up a session

    /// A session began: tells the peer how to reach us with datagrams (`setup`).
    package func connected(_ link: Link) async {
        guard let frame = await setup(for: link) else {
            NearbyLog.logger.info("no UDP socket: unreliable messages from \(link.peer.id) cannot arrive")
            return
        }
        await link.send(frame)
    }

    /// Our half of a new session's setup: opens the socket for the link's address family if needed,
    /// and returns the frame telling the peer our port, our tag and our sending key.
    func setup(for link: Link) async -> Frame? {
        guard let local = link.localAddress,
              let channel = await socket(family: local.protocol.rawValue, host: local.ipAddress ?? "0.0.0.0"),
              let port = channel.localAddress?.port
        else { return nil }
        let key = (0..<Datagram.keyBytes).map { _ in UInt8.random(in: 0...255) }
        let tag = state.withLock { state -> UInt64 in
            var tag = UInt64.random(in: 1...UInt64.max)
            while state.receiving[tag] != nil { tag = UInt64.random(in: 1...UInt64.max) }
            state.receiving[tag] = Receiving(peer: link.peer.ref, ownKey: key)
            return tag
        }
        link.datagrams.withLock { $0.tag = tag }
        return FrameBody.frame(.datagrams, FrameBody.Datagrams(port: port, tag: tag, key: key))
    }

    /// The peer's half: where to send it datagrams, and the key its datagrams to us are sealed with.
    package func peerSetup(_ setup: FrameBody.Datagrams, on link: Link) {
        guard let checked = setup.checked, let remote = link.remoteAddress?.ipAddress,
              let address = try? SocketAddress(ipAddress: remote, port: checked.port)
        else { return }
        guard let ours = link.datagrams.withLock({ $0.tag }),
              let ownKey = state.withLock({ state -> [UInt8]? in
                  guard var receiving = state.receiving[ours] else { return nil }
                  receiving.peerKey = checked.key
                  state.receiving[ours] = receiving
                  return receiving.ownKey
              })
        else { return }
        let waiters = link.datagrams.withLock { datagrams in
            datagrams.sending = Sending(key: ownKey, tag: checked.tag, address: address)
            defer { datagrams.setupWaiters = [] }
            return datagrams.setupWaiters
        }
        for waiter in waiters { waiter.settle(()) }
    }

    /// Forgets a session that ended. Its datagrams still in flight (sent just before the goodbye,
    /// which may be read first) are taken for `receiveGrace` more.
    package func remove(_ link: Link) {
        let (tag, waiters) = link.datagrams.withLock { datagrams in
            defer { datagrams = LinkDatagrams() }
            return (datagrams.tag, datagrams.setupWaiters)
        }
        for waiter in waiters { waiter.abandon() }
        guard let tag else { return }
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: Self.receiveGrace) {
            self.state.withLock { _ = $0.receiving.removeValue(forKey: tag) }
        }
    }

    static let receiveGrace = TimeAmount.seconds(2)
    /// Bytes asked for as the UDP socket's receive buffer.
    static let receiveBuffer: SocketOptionValue = 1 << 20

    package func close() {
        let sockets = state.withLock { state in
            state.closed = true
            defer { state.sockets = [:] }
            return Array(state.sockets.values)
        }
        for socket in sockets { socket.close(promise: nil) }
    }

    private func socket(family: Int32, host: String) async -> (any Channel)? {
        if let existing = state.withLock({ $0.sockets[family] }) { return existing }
        let any = host.contains(":") ? "::" : "0.0.0.0"
        // A larger receive buffer than the default (the kernel caps it at `net.core.rmem_max`): a
        // burst of messages waits there while the node is busy for a moment, rather than being lost.
        let bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_rcvbuf), value: Self.receiveBuffer)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Inbound(hub: self)) }
            }
        guard let channel = try? await bootstrap.bind(host: any, port: 0).get() else { return nil }
        let kept = state.withLock { state -> (any Channel)? in
            if state.closed { return nil }
            if let raced = state.sockets[family] { return raced }
            state.sockets[family] = channel
            return channel
        }
        if kept !== channel { channel.close(promise: nil) }
        if let port = channel.localAddress?.port { NearbyLog.logger.info("unreliable messages on UDP port \(port)") }
        return kept
    }

    // MARK: Sending

    /// Seals `messages` for the link's peer and sends them, waiting up to `wait` for the peer's setup
    /// (a session that has just begun). Returns false when the peer never set up datagrams.
    package func send(_ messages: [ByteBuffer], on link: Link, wait: Duration = .seconds(3)) async throws(NearbyError) -> Bool {
        // Not set up yet: wait, woken by the peer's setup or by the link's end (`remove`), else
        // giving up at `wait`.
        let setup = link.datagrams.withLock { datagrams -> OneShot<Void>? in
            guard datagrams.sending == nil, link.isActive else { return nil }
            let setup = OneShot<Void>()
            datagrams.setupWaiters.append(setup)
            return setup
        }
        if let setup, await setup.wait(until: .now + wait) == nil {
            link.datagrams.withLock { $0.setupWaiters.removeAll { $0 === setup } }
        }
        guard link.datagrams.withLock({ $0.sending != nil }) else { return false }
        guard let local = link.localAddress,
              let socket = state.withLock({ $0.sockets[local.protocol.rawValue] })
        else { return false }
        // Take the sequence numbers under the lock, seal outside it.
        guard let (sending, first) = link.datagrams.withLock({ datagrams -> (Sending, UInt64)? in
            guard var sending = datagrams.sending else { return nil }
            let first = sending.sequence + 1
            sending.sequence += UInt64(messages.count)
            datagrams.sending = sending
            return (sending, first)
        }) else { return false }
        let key = SymmetricKey(data: sending.key)
        var last: EventLoopFuture<Void>?
        for (index, message) in messages.enumerated() {
            guard message.readableBytes <= Datagram.maxPayload else {
                throw .messageTooLarge(bytes: message.readableBytes, limit: Datagram.maxPayload)
            }
            guard let sealed = try? Datagram.seal(message, key: key, tag: sending.tag, sequence: first + UInt64(index)) else { continue }
            let envelope = AddressedEnvelope(remoteAddress: sending.address, data: sealed)
            let promise = socket.eventLoop.makePromise(of: Void.self)
            socket.write(envelope, promise: promise)
            last = promise.futureResult
        }
        socket.flush()
        // A datagram the kernel refused (no route, a local firewall) is lost like any other.
        if let last { try? await last.get() }
        return true
    }

    // MARK: Receiving

    /// `source`: where it came from, as the datagram's IP header says (anyone can write it).
    fileprivate func received(_ datagram: ByteBuffer, from source: SocketAddress?) {
        let address = source.map(AddressWords.describe)
        guard let tag = Datagram.tag(of: datagram), let sequence = Datagram.sequence(of: datagram) else {
            return drop(peer: nil, address: address, reason: "not a nearby datagram")
        }
        enum Verdict { case deliver(PeerRef, [UInt8]), drop(PeerRef?, String) }
        let verdict = state.withLock { state -> Verdict in
            guard var receiving = state.receiving[tag], let key = receiving.peerKey else { return .drop(nil, "unknown session") }
            // Authenticated first: a tag is no proof, and a forger must not get a peer blamed.
            guard let message = Datagram.open(datagram, key: SymmetricKey(data: key)) else { return .drop(nil, "failed authentication") }
            guard receiving.window.check(sequence) else { return .drop(receiving.peer, "replayed") }
            _ = receiving.window.commit(sequence)
            state.receiving[tag] = receiving
            return .deliver(receiving.peer, message)
        }
        switch verdict {
        case let .deliver(peer, bytes):
            events.emit(Events.Message(bytes, from: peer, reliable: false))
        case let .drop(peer, reason):
            drop(peer: peer, address: address, reason: reason)
        }
    }

    private func drop(peer: PeerRef?, address: String?, reason: String) {
        NearbyLog.logger.info("dropped a datagram from \(address ?? "?") (\(reason))")
        let first = state.withLock { state -> Bool in
            state.dropped += 1
            state.lastReason = reason
            state.lastPeer = peer
            state.lastAddress = address
            guard !state.reportPending else { return false }
            state.reportPending = true
            return true
        }
        if first { report(after: .zero) }
    }

    /// Reports the count now, then lets the next report wait a second.
    private func report(after delay: TimeAmount) {
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: delay) {
            let snapshot = self.state.withLock { state in (state.dropped, state.lastReason, state.lastPeer, state.lastAddress) }
            self.events.emit(Events.DatagramsDropped(peer: snapshot.2, address: snapshot.3, dropped: snapshot.0, reason: snapshot.1))
            MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .seconds(1)) {
                let again = self.state.withLock { state -> Bool in
                    if state.dropped == snapshot.0 { state.reportPending = false; return false }
                    return true
                }
                if again { self.report(after: .zero) }
            }
        }
    }

    final class Inbound: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let hub: DatagramHub
        init(hub: DatagramHub) { self.hub = hub }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = Self.unwrapInboundIn(data)
            hub.received(envelope.data, from: envelope.remoteAddress)
        }
        /// ICMP errors and the like: UDP keeps going.
        func errorCaught(context: ChannelHandlerContext, error: any Error) {}
    }
}

extension Events {
    /// Datagrams (`send --unreliable`) that were dropped: forged or tampered with (`failed
    /// authentication`), seen before (`replayed`), or for no session of this node. `dropped` counts
    /// since the node started; at most one such event a second. `peer` only for a datagram that
    /// authenticated (a replay); `address` is where the latest one came from, by its IP header.
    package struct DatagramsDropped: EventBody {
        package static let event = "datagrams-dropped"
        package var peer: PeerRef?
        package var address: String?
        package var dropped: Int
        package var reason: String
    }
}

/// One link's datagram state, kept by the link (`Link.datagrams`) and gone with it: the tag the
/// peer seals its datagrams to us with, where and how we send to it, and the sends waiting for its
/// setup (a session that has just begun).
struct LinkDatagrams: Sendable {
    var tag: UInt64?
    var sending: DatagramHub.Sending?
    var setupWaiters: [OneShot<Void>] = []
}
