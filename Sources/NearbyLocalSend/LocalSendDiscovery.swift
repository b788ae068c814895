import NIOHTTP1
import Synchronization
import NearbyBase
import NearbyWire

/// LocalSend discovery (protocol v2, section 3.1): announce ourselves to the group, answer others'
/// announcements — `POST /register` to the announcer, else a UDP answer to the group — and keep the
/// devices heard in a `DeviceTable`. Announcing again every `announceEvery` makes live devices
/// answer again, which is how a device that went away is noticed (LocalSend has no goodbye).
package struct LocalSendDiscovery: Sendable {
    package enum Sighting: Sendable, Equatable {
        case found(LocalSendDevice)
        case updated(LocalSendDevice, changed: [String])
        case lost(LocalSendDevice)
        /// The table is full; this device and others are ignored until some are lost.
        case full(LocalSendDevice)
    }

    package let identity: LocalSendIdentity
    /// What we say about ourselves (`announce` is set per message).
    package private(set) var me: DeviceMessage
    let http: LocalSendHTTP?
    package var announceEvery: Duration = .seconds(10)
    /// Registers sent at once at most; more announcements meanwhile get the UDP answer.
    static let registersInFlight = 4

    package init(identity: LocalSendIdentity, alias: String, port: Int, http: LocalSendHTTP?) {
        self.identity = identity
        me = DeviceMessage(
            alias: alias, deviceModel: "nearby", deviceType: "headless", fingerprint: identity.fingerprint, port: port,
            protocol: "https", download: false)
        self.http = http
    }

    /// The same, announcing `port` (where its `registrations` server listens).
    package func announcing(port: Int) -> LocalSendDiscovery {
        var copy = self
        copy.me.port = port
        return copy
    }

    private enum Input: Sendable {
        case datagram(MulticastLink.Datagram)
        case registered(LocalSendDevice)
        /// A register to this address (answering its announcement) failed.
        case unanswered(String)
        case tick
    }

    /// Runs until `report` returns false, the task is cancelled, or the socket closes. With `scan`,
    /// also sweeps the local /24 once (`scan(_:)`), for devices whose multicast does not reach us.
    /// `registrations`: a server on the port `me` announces, where devices answer our announcement
    /// with `POST /register` (`RegisterRoutes`; the official apps answer no other way).
    package func run(
        _ link: MulticastLink, scan: Bool = false, registrations: LocalSendServer? = nil,
        report: @escaping @Sendable (Sighting) -> Bool
    ) async {
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(MulticastLink.queued))
        var announcement = me
        announcement.announce = true
        announcement.announcement = true
        let hello = announcement.encoded()
        var answer = me
        answer.announce = false
        answer.announcement = false
        let reply = answer.encoded()
        let registering = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await datagram in link.datagrams { feed.yield(.datagram(datagram)) }
                feed.finish()
            }
            if let registrations {
                var info = me
                info.announce = nil
                let routes = RegisterRoutes(me: info) { feed.yield(.registered($0)) }
                group.addTask { await registrations.run(routes) }
            }
            if scan {
                group.addTask {
                    // Again every two announcements, so a device only the sweep reaches is not lost.
                    while !Task.isCancelled {
                        await self.scan(link) { feed.yield(.registered($0)) }
                        try? await Task.sleep(for: announceEvery * 2)
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    link.announce(hello)
                    feed.yield(.tick)
                    try? await Task.sleep(for: announceEvery)
                }
            }
            var table = DeviceTable(ownFingerprint: identity.fingerprint, lifetime: announceEvery * 3 + .seconds(5))
            var gate = ReplyLimiter()
            loop: for await input in inputs {
                let now = ContinuousClock.now
                var heard: LocalSendDevice?
                var confirmed = false
                switch input {
                case .tick:
                    for device in table.expire(at: now) where !report(.lost(device)) { break loop }
                    continue
                case let .unanswered(host):
                    gate.failed(host, at: now)
                    continue
                case let .registered(device):
                    // Our own node on this host answers our announcement too.
                    guard !LocalSendIdentity.sameFingerprint(device.fingerprint, identity.fingerprint) else { continue }
                    heard = device
                    confirmed = true
                case let .datagram(datagram):
                    guard let message = DeviceMessage.decode(datagram.bytes, limit: LocalSendLimits.datagramBytes) else { continue }
                    let device = LocalSendDevice(message, host: datagram.host, interface: datagram.interface)
                    guard !LocalSendIdentity.sameFingerprint(device.fingerprint, identity.fingerprint) else { continue }
                    heard = device
                    if message.isAnnouncement, gate.allows(datagram.host, at: now) {
                        let started = registering.withLock { count -> Bool in
                            guard http != nil, count < Self.registersInFlight else { return false }
                            count += 1
                            return true
                        }
                        if started {
                            group.addTask {
                                defer { registering.withLock { $0 -= 1 } }
                                if let answered = await register(with: device) {
                                    feed.yield(.registered(answered))
                                } else {
                                    feed.yield(.unanswered(device.host))
                                    link.announce(reply)
                                }
                            }
                        } else {
                            link.announce(reply)
                        }
                    }
                }
                guard let heard, let change = table.heard(heard, confirmed: confirmed, at: now) else { continue }
                let sighting: Sighting = switch change {
                case let .found(device): .found(device)
                case let .updated(device, changed): .updated(device, changed: changed)
                case let .full(device): .full(device)
                }
                if !report(sighting) { break }
            }
            // The answer to a register that was just heard still goes out.
            await registrations?.settled()
            group.cancelAll()
        }
    }

    /// `POST /register` to an announcer: tells it about us; its answer says about it. Nil when it
    /// cannot be reached (then the UDP answer goes instead).
    func register(with device: LocalSendDevice) async -> LocalSendDevice? {
        guard let http else { return nil }
        var body = me
        body.announce = nil
        guard let response = try? await http.request(
            host: device.host, port: device.port, https: device.https, method: .POST,
            path: LocalSendDefaults.apiPrefix + "/register", body: .json(body.encoded()),
            expectedFingerprint: device.https ? device.fingerprint : nil, timeout: .seconds(2)),
            response.status == 200
        else { return nil }
        // The answer need not repeat the fingerprint (HTTPS: the certificate is the fingerprint).
        guard var message = DeviceMessage.decode(response.body, limit: LocalSendLimits.jsonBodyBytes, needsFingerprint: false) else {
            return device
        }
        message.fingerprint = device.fingerprint
        message.port = message.port ?? device.port
        message.protocol = message.protocol ?? (device.https ? "https" : "http")
        return LocalSendDevice(message, host: device.host, interface: device.interface)
    }
}
