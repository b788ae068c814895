import ArgumentParser
import Foundation
import NearbyCore
import NearbyDiscovery
import NearbyBase
import NearbyIdentity

extension Nearby {
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say why a peer is not seen: check the DNS-SD daemon, interfaces, multicast and the peer.",
            discussion: """
                Runs checks in order and prints each as a 'check' event (status ok, warn or fail, a \
                detail, and for warn and fail a hint to act on), then one 'summary' event:
                  daemon              the DNS-SD daemon (avahi-daemon) answers;
                  interfaces          which interfaces are up with multicast, their addresses, and \
                avahi-daemon.conf's allow-/deny-interfaces;
                  firewall            local nft rules that drop or reject port 5353 (when readable);
                  mdns-stacks         the processes holding UDP port 5353 here (/proc, as 'ss -lupn'): more \
                than one mDNS responder per IP family fails, naming them (owners this user may not read are said so);
                  self-advertisement  a probe published here (until doctor ends) comes back through the daemon;
                  responders          other services are announced on the link, this host's own not \
                counted (none: multicast looks blocked, or you are alone);
                  conflicts           the daemon announces the host name it is configured with (not h1-2 \
                after a conflict), no neighbour asked directly claims it too (a split brain: multicast blocked \
                between two hosts of one name), and no other host answers for PEER's instance;
                with PEER also:
                  peer                PEER is found on the service type (if not: what was found, PEER \
                on another service type, whether PEER was seen before, and whether its responder answers a \
                question sent by multicast that this host's daemon never heard it announce);
                  subnet              instead of peer, when PEER is HOST:PORT: HOST is on one of this \
                host's subnets (mDNS does not cross routers);
                  multicast-path      PEER's responder asked directly (unicast to its UDP 5353) and by \
                multicast, from a port of doctor's own: it answers only the first → multicast is filtered between \
                the two hosts; neither → its responder is down or UDP 5353 is blocked;
                  ghost               PEER, listed by the daemon, answers neither that question nor a \
                TCP connection (it went away without a goodbye);
                  connect             a TCP connection to each of its addresses;
                  addresses           each address PEER advertises: the unreachable ones named, with a \
                docker or VPN range when they are in one;
                  encryption          the preamble agrees on encryption;
                  identity            the handshake: the peer proves the key of the ID it advertises, \
                and known_peers pins no other key for it;
                  peer-sees-us        the peer is asked whether it sees this host's probe (one-way \
                multicast: we see it, it does not see us).
                When the firewall check finds a rule, the other multicast checks' hints name it. \
                With --domain (wide-area DNS-SD): daemon (not with --no-link), then for each domain \
                dns-server (it answers), zone (it exists), key (a probe record registered and deleted \
                with the TSIG key), clock (TSIG BADTIME), our-records (this identity is registered); \
                with PEER: peer, looked for on the link (not with --no-link) and in each domain \
                (PTR → SRV → A/AAAA), then connect, encryption, identity where it was found. Exit 11 \
                server unreachable, 13 zone refused, 12 key or clock rejected, 8 key file unusable.
                With --localsend (LocalSend devices): multicast-group (224.0.0.167 joined, on \
                which interfaces, and ff12::fd3a:e420 on which), port (TCP 53317 free or taken), devices (which answer our \
                announcement); with PEER also peer, info (its /api/localsend/v2/info answers) and \
                certificate (it hashes to the fingerprint the device announced; exit 9 if not).
                Nothing invites the peer: it starts no session, pins nothing and shows no invitation. \
                --timeout bounds the whole run (checks run side by side where they can; with --domain, \
                each place PEER is looked for has it); a check it cuts short is a warning that says so.
                Exit 0 when nothing failed, else the status of the first failure: 7 daemon, 2 peer \
                not found or a ghost, 5 cannot connect or encryption mismatch, 9 identity, 1 otherwise \
                (peer-sees-us: one-way multicast; multicast-path, mdns-stacks, conflicts).

                Examples:
                  nearby doctor
                  nearby doctor "Bob's Pi" --timeout 5
                  nearby doctor 192.168.1.20:52345
                  nearby doctor bob --service chat | jq -r 'select(.event=="check" and .status!="ok") | .hint'
                """)

        @Argument(help: ArgumentHelp("The peer that is not seen (ID, ID prefix, display name, or HOST:PORT).", valueName: "peer"), completion: .peers)
        var peer: String?

        @OptionGroup var serviceOptions: ServiceOptions

        // Optional, so that the help says its default once, in its own words (not "(default: 5.0)" too).
        @Option(name: .customLong("timeout"), help: ArgumentHelp("Seconds the run may take: every check shares one deadline from the start (default: 5).", valueName: "seconds"))
        var givenTimeout: Double?

        var timeout: Double { givenTimeout ?? 5 }

        @OptionGroup var session: SessionOptions
        @OptionGroup var localSend: LocalSendOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard timeout > 0, timeout.isFinite, timeout <= 600 else { throw ValidationError("--timeout must be between 0 and 600 seconds") }
        }


        func run() async throws {
            // One deadline for every check, from the start: they run side by side where they can,
            // each takes what is left, and the run ends by --timeout.
            let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
            let startedAt = Date()
            let context = output.configure(CommandContext.current)
            if localSend.enabled(context) { return try await LocalSendCommands.doctor(context, peer: peer, until: deadline, verbose: output.verbose) }
            var checks: [DoctorCheck] = []
            try await reporting(context, verbose: output.verbose) {
                try PeerQuery.check([peer])
                let service = try serviceOptions.resolve(context)
                let identity = try context.identity()
                let record: (DoctorCheck) -> Void = { check in
                    checks.append(check)
                    context.events.emit(Events.Check(check))
                }
                let wideAreas = try serviceOptions.wideArea.resolveAll(context)
                if !wideAreas.isEmpty {
                    return await wideAreaChecks(wideAreas, service: service, identity: identity, context: context, record: record)
                }
                guard let survey = await Self.daemonCheck(until: deadline, record: record) else { return }
                defer { survey.stop() }

                let config = try? String(contentsOfFile: "/etc/avahi/avahi-daemon.conf", encoding: .utf8)
                let interfaces = NetworkInterface.list()
                record(NetworkInterface.check(interfaces, daemonConfig: config))
                let ruleset = FirewallRules.read()
                record(FirewallRules.check(ruleset: ruleset))
                let holders = MDNSStacks.holders()
                record(MDNSStacks.check(holders, asRoot: geteuid() == 0))
                // A local rule dropping mDNS is what every multicast check's hint names first.
                let dropping = ruleset.map(FirewallRules.dropping) ?? []
                // Looking for PEER runs beside the checks of this host, so the run keeps to --timeout
                // rather than spending it once per check.
                let named = peer.flatMap { Node.parseHostPort($0) == nil ? $0 : nil }
                let (paths, environment) = (context.paths, context.environment)
                let notFoundHints = [DoctorCheck.multicastHint(firewall: dropping, otherwise: ""), Subnets.notFoundHint(interfaces)]
                async let looked: PeerCheck? = Self.findPeer(
                    ifNamed: named, service: service, selfID: identity.peerID, paths: paths, environment: environment, survey: survey,
                    interfaces: interfaces, notFoundHints: notFoundHints, firewall: dropping, until: deadline)
                // The probe stays published to the end: PEER is asked whether it sees it.
                let (selfCheck, selfProbe) = await Self.selfAdvertisement(identity: identity, firewall: dropping, until: deadline)
                defer { selfProbe?.advertiser.withdraw() }
                record(selfCheck)
                // This host's name asked of its neighbours directly, beside the rest: a split brain.
                let configured = AvahiHostName.configured(holders: holders)
                async let claims = Self.hostClaims(
                    selfProbe?.host ?? configured.name.map { "\($0).local" }, interfaces: interfaces, environment: environment, until: deadline)
                // Responders waits to the deadline when nothing else is announced: PEER's checks
                // run beside it (they need the probe published), and are said after it, in order.
                async let responders = Self.responders(
                    survey, selfID: identity.peerID, ownHost: selfProbe?.host, ownAddresses: interfaces.flatMap(\.addresses),
                    hint: DoctorCheck.multicastHint(firewall: dropping, otherwise: DoctorCheck.multicastHint), until: deadline)
                var ofPeer: [DoctorCheck] = []
                let evidence = PeerEvidence()
                await peerChecks(
                    await looked, interfaces: interfaces, identity: identity, paths: context.paths, environment: environment, service: service,
                    survey: survey, probe: selfProbe?.name, evidence: evidence, started: startedAt, until: deadline
                ) { ofPeer.append($0) }
                record(await responders)
                // This host's announced name against its configured one, whether a neighbour claims
                // it too, and whether another host answers for PEER's instance (what PEER's
                // responder was asked showed).
                let found = evidence.found.withLock { $0 }
                record(DoctorCheck.conflicts(
                    current: selfProbe?.host, configured: configured.name, configuredFrom: configured.from,
                    instance: found.instance, peerHost: found.host, others: found.others,
                    claims: await claims, ownAddresses: interfaces.flatMap(\.addresses)))
                ofPeer.forEach(record)
            }
            context.events.emit(Events.Summary(checks))
            let status = DoctorCheck.exitStatus(of: checks)
            if status != .success { throw ExitCode(status.rawValue) }
        }

        /// This host's probe, published for the whole run so that PEER can be asked whether it sees it.
        struct SelfProbe: Sendable {
            let advertiser: Advertiser
            let name: String
            /// This host's mDNS name, as the probe resolved (nil when it did not come back).
            let host: String?
        }

        /// Publishes a probe and browses for it: the daemon publishes and sees its own, by
        /// `deadline`. The probe stays published (the caller stops it) when it could be published at all.
        static func selfAdvertisement(identity: Identity, firewall: [String], until deadline: ContinuousClock.Instant) async -> (DoctorCheck, SelfProbe?) {
            let started = ContinuousClock.now
            let name = "doctor-\(identity.peerID.rawValue)-\(Int.random(in: 1000...9999))"
            do throws(NearbyError) {
                let type = try ServiceType(DoctorProbe.service)
                let advertiser = Advertiser(
                    service: type, instance: name, port: 9, txt: TXTRecord(displayName: "nearby doctor", info: [:], protocolVersion: nil))
                let browser = Browser(service: type)
                let updates = try await browser.start()
                defer { browser.stop() }
                let published = await firstResult(until: deadline) { () -> Result<Void, NearbyError>? in
                    do throws(NearbyError) { try await advertiser.start() } catch { return .failure(error) }
                    return .success(())
                }
                guard let published else {
                    return (DoctorCheck(
                        "self-advertisement", .warn, "the daemon had not confirmed a probe published as \(name) when doctor's --timeout ran out",
                        hint: "run doctor again with a longer --timeout"), nil)
                }
                try published.get()
                let seen = await firstResult(until: deadline) { () -> DiscoveredPeer? in
                    for await update in updates { if case let .found(peer) = update, peer.instance == name { return peer } }
                    return nil
                }
                let probe = SelfProbe(advertiser: advertiser, name: name, host: seen?.host)
                let hint = DoctorCheck.multicastHint(
                    firewall: firewall,
                    otherwise: "the daemon publishes but does not see its own announcements: check its interfaces (allow-interfaces) and 'journalctl -u avahi-daemon'")
                return seen != nil
                    ? (DoctorCheck("self-advertisement", .ok, "a probe published as \(name) came back through the daemon (host \(seen?.host ?? "?"))"), probe)
                    : (DoctorCheck("self-advertisement", .fail, "a probe published as \(name) did not come back in \(Self.seconds(ContinuousClock.now - started))", hint: hint), probe)
            } catch {
                return (DoctorCheck("self-advertisement", .fail, "could not publish a probe: \(error.errorDescription ?? "\(error)")",
                                    hint: DoctorCheck.daemonHint, exitStatus: error.exitStatus), nil)
            }
        }
    }
}
