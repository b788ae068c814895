import NearbyCore

extension Nearby.Doctor {
    /// `doctor --domain`: the unicast DNS checks instead of the mDNS ones, then with PEER the same
    /// connect, encryption and identity checks.
    func wideAreaChecks(
        _ settings: WideAreaSettings, service: ServiceType, identity: Identity, context: CommandContext, record: (DoctorCheck) -> Void
    ) async {
        let doctor = WideAreaDoctor(settings: settings)
        await doctor.run(service: service, selfID: identity.peerID, record: record)
        guard let peer, let found = await doctor.findPeer(peer, service: service, selfID: identity.peerID, record: record),
              let port = found.port
        else { return }
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
