import NearbyCore

extension Nearby.Doctor {
    /// `doctor --domain`: the unicast DNS checks of each domain instead of the mDNS ones, then with
    /// PEER, found in any of the domains, the same connect, encryption and identity checks.
    func wideAreaChecks(
        _ domains: [WideAreaSettings], service: ServiceType, identity: Identity, context: CommandContext, record: (DoctorCheck) -> Void
    ) async {
        for settings in domains {
            await WideAreaDoctor(settings: settings).run(service: service, selfID: identity.peerID, record: record)
        }
        guard let peer else { return }
        // The peer in the first domain that has it; only when none does, every domain's reason.
        var misses: [DoctorCheck] = []
        var found: DiscoveredPeer?
        for settings in domains where found == nil {
            var checks: [DoctorCheck] = []
            found = await WideAreaDoctor(settings: settings).findPeer(peer, service: service, selfID: identity.peerID) { checks.append($0) }
            if found == nil { misses += checks } else { checks.forEach(record) }
        }
        guard let found, let port = found.port else { return misses.forEach(record) }
        let target = Target(
            addresses: found.addresses.isEmpty ? [found.host].compactMap { $0 } : found.addresses, port: port,
            expected: PeerID(found.instance), name: found.txt.displayName ?? found.instance)
        await Self.connectChecks(
            target, identity: identity, preference: session.mode, knownPeers: KnownPeers(paths: context.paths),
            probe: nil, replyWithin: .seconds(Int64(timeout)) + .seconds(2)
        ) { check in
            // Whether the peer sees our mDNS probe means nothing across a router.
            if check.name != "peer-sees-us" { record(check) }
        }
    }
}
