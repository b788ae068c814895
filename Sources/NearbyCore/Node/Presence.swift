import NearbyBase
import NearbyDiscovery
/// Where the node is seen: its DNS-SD advertisement on the link and its registration in each
/// unicast DNS domain (`--domain`). When the daemon goes away under the advertisement it says so
/// and registers again as soon as the daemon answers, printing `advertising` again.
actor Presence {
    private let configuration: NodeConfiguration
    /// The DNS-SD instance: the node's peer ID.
    private let instance: String
    private let events: any EventSink
    /// Runs work as a child of the node (registering again).
    private let spawn: @Sendable (@escaping @Sendable () async -> Void) -> Void
    private var advertiser: Advertiser?
    /// `--domain`: the registration in each unicast DNS domain, besides `advertiser` on the link.
    private var registrars: [WideAreaRegistrar] = []
    /// Printed again once the advertisement is back.
    private var announcement: Events.Advertising?
    private var stopped = false

    init(
        configuration: NodeConfiguration, instance: String, events: any EventSink,
        spawn: @escaping @Sendable (@escaping @Sendable () async -> Void) -> Void
    ) {
        self.configuration = configuration
        self.instance = instance
        self.events = events
        self.spawn = spawn
    }

    /// One `advertising` event per place the node is in: the link, then each domain. `registeredAs`:
    /// the DNS-SD instance name the link's daemon gave us (another host may have had our ID first).
    nonisolated func advertising(name: String, port: Int, registeredAs: String?) -> [Events.Advertising] {
        let renamed = registeredAs.flatMap { $0 == instance ? nil : $0 }
        return configuration.domains.map {
            Events.Advertising(
                peer: PeerRef(id: instance, name: name), service: configuration.service.name,
                domain: $0, port: port, info: configuration.info, instance: $0 == "local." ? renamed : nil, stopsAfter: configuration.stopsAfter)
        }
    }

    /// Registers in each domain, then on the link; a place that refuses undoes the others and
    /// fails the start.
    func start(port: UInt16, txt: TXTRecord, announcing announcement: Events.Advertising) async throws(NearbyError) {
        self.announcement = announcement
        do throws(NearbyError) {
            for wideArea in configuration.wideAreas {
                let registrar = try WideAreaRegistrar(settings: wideArea, service: configuration.service, instance: instance, port: port, txt: txt)
                try await registrar.start()
                registrars.append(registrar)
            }
            guard configuration.link || configuration.wideAreas.isEmpty else { return }
            let advertiser = Advertiser(service: configuration.service, instance: instance, port: port, txt: txt)
            try await advertiser.start(lost: advertisementLost)
            self.advertiser = advertiser
        } catch {
            for registrar in registrars { await registrar.stop() }
            registrars = []
            throw error
        }
    }

    /// The name the link's advertisement is registered under (nil: not on the link).
    var registeredName: String? { advertiser?.registeredName }

    /// Withdraws the advertisement and every registration.
    func stop() async {
        stopped = true
        await advertiser?.stop()
        for registrar in registrars { await registrar.stop() }
    }

    /// The daemon went away under our advertisement (stopped, restarted).
    private nonisolated var advertisementLost: @Sendable () -> Void {
        { [self] in spawn { await self.readvertise() } }
    }

    private func readvertise() async {
        guard let advertiser, !stopped else { return }
        // Not a failure of the node, which runs on: a wait, with no exit status.
        events.emit(Events.Waiting(
            for: "daemon", service: configuration.service.name,
            reason: "the DNS-SD daemon went away: not discoverable until it is back, then advertising again"))
        NearbyLog.logger.warning("the DNS-SD daemon went away; registering again as soon as it is back")
        while !stopped {
            do {
                try await Task.sleep(for: .milliseconds(500))
            } catch {
                return
            }
            do {
                try await advertiser.start(lost: advertisementLost)
                if stopped { return await advertiser.stop() }
                if let announcement { events.emit(announcement) }
                return
            } catch {
                continue
            }
        }
    }
}
