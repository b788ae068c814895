import ArgumentParser
import Foundation
import NearbyCore
import NearbyLocalSend
import NearbyWeb
import NearbyBase
import NearbyControl
import NearbyDiscovery
import NearbyTransfer

/// `--localsend` (or NEARBY_LOCALSEND=1): the command talks LocalSend (protocol v2) instead of
/// nearby's own protocol. Every command that takes it branches into `LocalSendCommands` at once.
struct LocalSendOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).",
        discussion: "Discovery by multicast on 224.0.0.167:53317 and [ff12::fd3a:e420]:53317, transfers over HTTPS; see 'LocalSend' in the README."))
    var localsend = false

    func enabled(_ context: CommandContext) -> Bool {
        localsend || context.environment["NEARBY_LOCALSEND"] == "1"
    }
}

/// `--pin` for LocalSend: the PIN a receiving device asks for (send, send-file), or the one a
/// sender must give us (advertise, accept).
struct LocalSendPIN: ParsableArguments {
    @Option(help: ArgumentHelp(
        "With --localsend: the PIN (sending: the one the receiving device asks for; receiving: the one senders must give).",
        valueName: "pin"))
    var pin: String?
}

/// The LocalSend side of each command: the same events, errors and exit codes as nearby's own.
enum LocalSendCommands {
    static func identity(_ context: CommandContext) throws(NearbyError) -> LocalSendIdentity {
        let store = LocalSendIdentityStore(paths: context.paths)
        let identity = try store.loadOrCreate()
        if let previous = identity.renewedFrom {
            // Once: the stored certificate had nearby's old narrow dates (a day before it was made, ten years).
            let reason = "its certificate is now valid 1975-4096 as the official app's, so that a device whose clock is wrong accepts it; "
                + "a device that remembered this machine by \(previous) sees \(identity.fingerprint) now"
            NearbyLog.logger.warning("LocalSend: \(store.path): \(reason)")
            context.events.emit(Events.IdentityRenewed(fingerprint: identity.fingerprint, previous: previous, reason: reason))
        }
        return identity
    }

    /// Our alias: --name, else the nearby identity's display name.
    static func alias(_ context: CommandContext, name: String?) throws(NearbyError) -> String {
        if let name { return name }
        return try context.identity().displayName
    }

    static func client(_ identity: LocalSendIdentity) throws(NearbyError) -> LocalSendHTTP {
        do { return try LocalSendHTTP(identity: identity) } catch {
            throw .identityIO(path: "localsend.json", reason: "its certificate cannot be used for TLS: \(error)")
        }
    }

    static func discovery(_ context: CommandContext, name: String?) throws(NearbyError) -> LocalSendDiscovery {
        let identity = try identity(context)
        return LocalSendDiscovery(identity: identity, alias: try alias(context, name: name), port: LocalSendDefaults.port, http: try client(identity))
    }

    /// Where devices answer our announcements while we look for them (official apps answer only
    /// with `POST /register` to the port we announce): 53317, another port when it is taken (then
    /// announced), none when no port can be had (devices are then heard only when they announce).
    /// Closing, it does not wait on a phone's kept connection (`LocalSendServer.briefGoodbye`).
    static func registrations(_ identity: LocalSendIdentity) async -> LocalSendServer? {
        do {
            return try await LocalSendServer.bind(identity: identity, goodbye: LocalSendServer.briefGoodbye)
        } catch {
            NearbyLog.logger.info("LocalSend: no TCP port for devices' answers (\(error.errorDescription ?? "\(error)")): hearing only their announcements")
            return nil
        }
    }

    static func seen(_ device: LocalSendDevice, started: ContinuousClock.Instant) -> Events.PeerSeen {
        Events.PeerSeen(
            peer: device.ref, service: "localsend", kind: .localsend, protocolVersion: device.version, info: device.info,
            host: device.host, port: device.port, addresses: [device.host], interface: device.interface, isSelf: false,
            elapsedMs: Int((ContinuousClock.now - started) / .milliseconds(1)))
    }

    /// `browse --localsend`: found / updated / lost until --timeout, --count or --peer is met, or Ctrl-C.
    static func browse(_ context: CommandContext, timeout: Double?, count: Int?, peer: String?, scan: Bool) async throws {
        let plain = try discovery(context, name: nil)
        let link = try await MulticastLink.open()
        defer { link.close() }
        let registrations = await registrations(plain.identity)
        let discovery = registrations.map { plain.announcing(port: $0.port) } ?? plain
        let limit = timeout ?? (peer == nil ? nil : Nearby.Browse.defaultPeerTimeout)
        // When it stops, as a nearby browse says it: not "Ctrl-C to stop" for a browse that ends by itself.
        context.events.emit(Events.Browsing(service: "localsend", domain: "local.", stopsAfter: limit))
        let started = ContinuousClock.now
        let matched = Locked(false)
        let found = Locked(0)
        let browsing: @Sendable () async -> Void? = {
            await discovery.run(link, scan: scan, registrations: registrations) { sighting in
                switch sighting {
                case let .found(device):
                    guard peer.map(device.matches) ?? true else { return true }
                    context.events.emit(seen(device, started: started))
                    found.withLock { $0 += 1 }
                    if peer != nil { matched.withLock { $0 = true } }
                    return peer == nil && found.withLock { $0 } != count
                case let .updated(device, changed):
                    guard peer.map(device.matches) ?? true else { return true }
                    context.events.emit(Events.PeerUpdated(changed: changed, seen: seen(device, started: started)))
                case let .lost(device):
                    guard peer.map(device.matches) ?? true else { return true }
                    context.events.emit(Events.Lost(peer: device.ref, service: "localsend", elapsedMs: Int((ContinuousClock.now - started) / .milliseconds(1))))
                case let .full(device):
                    Console(verbose: true).info("more than \(LocalSendLimits.devices) LocalSend devices answer; ignoring the rest (the latest: \(device.host))")
                }
                return true
            }
            return ()
        }
        _ = try? await interruptible("browsing") {
            if let limit { _ = await firstResult(within: .milliseconds(Int(limit * 1000)), browsing) } else { _ = await browsing() }
        }
        if let peer, !matched.withLock({ $0 }) { throw NearbyError.peerNotFound(peer, waitedSeconds: limit ?? 0) }
        if found.withLock({ $0 }) == 0, timeout != nil {
            let hint = "is a LocalSend app open on the same network, and does this host route 224.0.0.0/4 (multicast) on that link? try `nearby doctor --localsend`"
            context.events.emit(Events.NothingFound(service: "localsend", seconds: limit ?? 0, hint: hint))
            Console(verbose: true).info("nothing found on LocalSend in \(limit ?? 0) s — \(hint)")
        }
    }

    /// `advertise --localsend` (until Ctrl-C) and `accept --localsend` (until its first transfer
    /// ends: a file that did not arrive whole fails the command, as nearby's `accept`). `timeout`
    /// bounds accept's wait for a transfer, as nearby's `accept --timeout` (exit 4, `no-invitation`).
    /// `webDevice`: with `advertise --web`, the upload page beside the node (named so), on the node's
    /// admission and strangers' quota.
    static func serve(
        _ context: CommandContext, policy: LocalSendPolicy, name: String?, port: Int?, untilFirstTransfer: Bool, timeout: Double? = nil,
        webDevice: String? = nil, allowDotfiles: Bool = false
    ) async throws {
        let peerID = try context.identity().peerID
        let control = LocalSendControl.address(paths: context.paths, environment: context.environment, peerID: peerID)
        let noInvitation = NearbyError.noInvitation(from: policy.acceptFrom.first, seconds: timeout ?? 0)
        let wait = timeout.map { Duration.milliseconds(Int($0 * 1000)) }
        if untilFirstTransfer, let line = try await interruptible("waiting for a LocalSend transfer", {
            try await withDeadline(wait, else: noInvitation) {
                try await LocalSendControl.ask(control, query: policy.acceptFrom.first, accept: !policy.declineFirst)
            }
        }) {
            // A running `advertise --localsend` answered: its event is this command's outcome.
            let replies = NodeReplies(context.events)
            replies.print(line)
            try replies.outcome(line.contains(#""event":"error""#) ? (DecodedEvent(line: line, kinds: [Events.Failure.self])?.body as? Events.Failure)?.exitStatus ?? 1 : 0)
            return
        }
        let node = LocalSendReceivingNode(
            identity: try identity(context), alias: try alias(context, name: name), policy: policy,
            known: LocalSendKnownDevices(paths: context.paths), events: context.events)
        var page: (server: WebServer, box: WebDropBox)?
        if let webDevice {
            page = try await WebCommands.dropBox(context, saveDir: policy.saveDirectory, device: webDevice, partials: node.partials, admission: node.admission,
                allowDotfiles: allowDotfiles)
        }
        let beside: (@Sendable () async -> Void)? = page.map { page in { @Sendable in await page.server.run(page.box) } }
        let what = untilFirstTransfer ? (policy.declineFirst ? "waiting for a LocalSend transfer to decline" : "waiting for a LocalSend transfer") : "serving LocalSend"
        let outcome: NearbyError?
        do {
            outcome = try await interruptible(what) {
                try await node.run(
                    port: port ?? LocalSendDefaults.port, untilFirstTransfer: untilFirstTransfer, control: untilFirstTransfer ? nil : control,
                    firstTransferWithin: wait.map { ($0, noInvitation) }, beside: beside)
            }
        } catch let error as NearbyError where error.isCancellation && !untilFirstTransfer {
            return
        }
        if let outcome { throw outcome }
    }

    /// `work`, or `failure` when `limit` passes first (no limit: `work` alone): the core's one
    /// deadline race (`firstResult`), with `work`'s own error passed on.
    static func withDeadline<T: Sendable>(_ limit: Duration?, else failure: NearbyError, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        guard let limit else { return try await work() }
        let outcome: Result<T, any Error>? = await firstResult(within: limit) {
            do { return .success(try await work()) } catch { return .failure(error) }
        }
        guard let outcome else {
            try Task.checkCancellation()
            throw failure
        }
        return try outcome.get()
    }

    /// `doctor --localsend [PEER]`: the checks as `check` events, then the `summary`; the exit
    /// status of the first failure.
    static func doctor(_ context: CommandContext, peer: String?, until deadline: ContinuousClock.Instant, verbose: Bool) async throws {
        let checks = Locked<[DoctorCheck]>([])
        try await reporting(context, verbose: verbose) {
            let discovery = try discovery(context, name: nil)
            let doctor = LocalSendDoctor(discovery: discovery, http: try client(discovery.identity))
            await doctor.run(peer: peer, until: deadline) { check in
                checks.withLock { $0.append(check) }
                context.events.emit(Events.Check(check))
            }
        }
        context.events.emit(Events.Summary(checks.withLock { $0 }))
        let status = DoctorCheck.exitStatus(of: checks.withLock { $0 })
        if status != .success { throw ExitCode(status.rawValue) }
    }

    /// Finds PEER (or takes its address) for a send.
    static func target(_ peer: String, discovery: LocalSendDiscovery, timeout: Double) async throws(NearbyError) -> LocalSendTarget {
        if let address = LocalSendTarget.address(peer) {
            return await LocalSendTarget.asking(host: address.host, port: address.port, http: try client(discovery.identity))
        }
        let link = try await MulticastLink.open()
        defer { link.close() }
        let registrations = await registrations(discovery.identity)
        let looking = registrations.map { discovery.announcing(port: $0.port) } ?? discovery
        return LocalSendTarget(try await looking.find(peer, link: link, registrations: registrations, timeout: .milliseconds(Int(timeout * 1000))))
    }

    /// How long the device's person may take to answer: `--timeout` when given, else as long as a
    /// person takes (`LocalSendSender.personsPace`); `timeout` (default 30 s) bounds finding it.
    static func answerLimit(_ given: Double?) -> Duration {
        given.map { .milliseconds(Int($0 * 1000)) } ?? LocalSendSender.personsPace
    }

    static func sendFiles(
        _ context: CommandContext, peer: String, paths: [String], pin: String?, timeout: Double, given: Double?, name: String?
    ) async throws {
        let files = try FileList.collect(paths) { context.events.emit(Events.Skipped($0)) }
        let discovery = try discovery(context, name: name)
        try await interruptible("sending to \(peer)") {
            let target = try await target(peer, discovery: discovery, timeout: timeout)
            // While the files go, the port our info names answers the receiver's /cancel (none to be had: not heard).
            let listening = await registrations(discovery.identity)
            var me = discovery.me
            if let listening { me.port = listening.port }
            let sender = LocalSendSender(http: try client(discovery.identity), me: me, events: context.events)
            try await sender.sendFiles(files, to: target, pin: pin, timeout: answerLimit(given), hearingCancelOn: listening)
        }
    }

    static func sendText(
        _ context: CommandContext, peer: String, text: String, pin: String?, timeout: Double, given: Double?, name: String?
    ) async throws {
        let discovery = try discovery(context, name: name)
        let sender = LocalSendSender(http: try client(discovery.identity), me: discovery.me, events: context.events)
        try await interruptible("sending to \(peer)") {
            let target = try await target(peer, discovery: discovery, timeout: timeout)
            try await sender.sendText(text, to: target, pin: pin, timeout: answerLimit(given))
        }
    }
}
