import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

extension Nearby.Doctor {
    /// `doctor --domain`: as a node is on the link and in its domains, the link's daemon check
    /// (not with `--no-link`) and the unicast DNS checks of each domain; then PEER, looked for on the
    /// link and in each domain, with the same connect, encryption and identity checks where found.
    func wideAreaChecks(
        _ domains: [WideAreaSettings], service: ServiceType, identity: Identity, context: CommandContext, record: (DoctorCheck) -> Void
    ) async {
        let survey = serviceOptions.wideArea.link
            ? await Self.daemonCheck(until: .now + .milliseconds(Int64(timeout * 1000)), record: record) : nil
        defer { survey?.stop() }
        for settings in domains {
            await WideAreaDoctor(settings: settings).run(service: service, selfID: identity.peerID, record: record)
        }
        guard let peer else { return }
        // The link and each domain have --timeout, as before; the connection checks 2 s more.
        let limit = Duration.milliseconds(Int64(timeout * 1000))
        // The peer in the first place that has it (the link first); only when none does, every
        // place's reason.
        var misses: [DoctorCheck] = []
        var found: DiscoveredPeer?
        if let survey {
            let onLink = await Self.findPeer(
                peer, service: service, selfID: identity.peerID, paths: context.paths, environment: context.environment, survey: survey,
                notFoundHints: [], until: .now + limit)
            found = onLink.found
            if found == nil { misses.append(onLink.check) } else { record(onLink.check) }
        }
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
            probe: nil, until: .now + limit + .seconds(2)
        ) { check in
            // Whether the peer sees our mDNS probe means nothing across a router.
            if check.name != "peer-sees-us" { record(check) }
        }
    }
}

extension Nearby.Doctor {
    /// The `daemon` check: a survey of the link started (the caller stops it), or nil and the
    /// failure recorded — also when the daemon runs but does not answer by `deadline` (hung).
    static func daemonCheck(until deadline: ContinuousClock.Instant, record: (DoctorCheck) -> Void) async -> Survey? {
        let survey = Survey()
        let started = ContinuousClock.now
        let outcome = await firstResult(until: deadline) { () -> Result<Void, NearbyError>? in
            do throws(NearbyError) {
                try await survey.start()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success?:
            record(DoctorCheck("daemon", .ok, "avahi-daemon answers DNS-SD requests"))
            return survey
        case let .failure(error)?:
            survey.stop()
            record(DoctorCheck.daemonFailed(error))
        case nil:
            survey.stop()
            record(DoctorCheck.daemonSilent(after: ContinuousClock.now - started))
        }
        return nil
    }
}
