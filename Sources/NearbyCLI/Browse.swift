import ArgumentParser
import NearbyCore
import NearbyBase
import NearbyIdentity
import NearbyDiscovery

extension Nearby {
    struct Browse: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print peers as they are found and lost.",
            discussion: """
                Prints 'browsing', then a 'found' event per peer (ID, name, discovery info, host, \
                port, addresses, interface, whether it is a nearby node or a plain MPC app), 'updated' \
                when its discovery info or addresses change, and 'lost' when it goes away. Each peer \
                is reported once, however many interfaces and IP families see it. Runs until \
                interrupted, --timeout or --count; with --peer, until that peer is found (exit 0) or \
                the time is up (exit 2, with the near names seen, as send says them); a name two \
                peers share is refused as send refuses it (exit 2, both listed). --now lists what is there now: it exits once no new answer \
                came for 1 s (after at least 2 s). A browse that ends by time having found nothing \
                says so on stderr ('nothing found on _nearby._tcp in 5 s — try `nearby doctor`') and \
                as a 'nothing-found' event. On a terminal, --live draws the peers and their hosts \
                as a table redrawn in place (addresses per interface, discovery info, when each was \
                found, changed or lost), the latest changes below it; in a pipe or with --json it \
                prints the same events as without it. The TTLs and the questions asked on the link \
                need the packets: 'nearby watch'.

                Debugging discovery beyond nearby: --types prints a 'type' event per DNS-SD service \
                type announced on the link (the _services._dns-sd._udp meta-query) with its number \
                of instances, again whenever that number changes (0: gone). --service with a full \
                DNS-SD type such as _http._tcp (a leading '_' and a ._tcp or ._udp end) prints a \
                'service' event per instance of it (state found, updated or lost; host, port, \
                addresses, interface, the TXT record as key/value pairs).

                Beyond the link: --domain also browses a unicast DNS domain (wide-area DNS-SD), \
                polling every TTL; the events are the same, with 'domain', and a peer seen on the \
                link and in the domain is one peer. --domains prints a \
                'browse-domain' event per domain the network offers (PTR records of \
                b._dns-sd._udp and lb._dns-sd._udp under --domain, else under the resolver's \
                search domains and this host's reverse zones) and exits.

                Examples:
                  nearby browse --timeout 5 | jq -r 'select(.event=="found") | .peer.name'
                  nearby browse --now
                  nearby browse --live
                  nearby browse --service chat --count 1
                  nearby browse --peer alice --timeout 10 >/dev/null && echo "alice is here"
                  nearby browse --types --timeout 3
                  nearby browse --service _http._tcp --timeout 3 | jq .txt
                  nearby browse --domain office.example.org --dns-server ns.example.org
                  nearby browse --domains
                """)

        @OptionGroup var serviceOptions: ServiceOptions

        @Option(help: ArgumentHelp("Stop after this many seconds (exit 0; with --peer, exit 2).", valueName: "seconds"))
        var timeout: Double?

        @Option(help: ArgumentHelp("Stop after this many peers were found (exit 0).", valueName: "n"))
        var count: Int?

        @Option(
            help: ArgumentHelp(
                "Wait for this peer (ID, ID prefix or display name) and exit 0 when found; exit 2 if it is not found in time (default 10 s) or names several peers.",
                valueName: "peer"),
            completion: .peers)
        var peer: String?

        @Flag(help: "List every DNS-SD service type on the link with its number of instances.")
        var types = false

        @Flag(help: "List what the link holds now and exit once the answers stop coming (no new one for 1 s), as avahi-browse -t does.")
        var now = false

        @Flag(help: "List the browse domains the network offers (unicast DNS, RFC 6763 §11), under --domain or the resolver's search domains.")
        var domains = false

        @Flag(help: "On a terminal: a table of the peers and their hosts, redrawn in place as they come and go, the latest changes below (no root needed; in a pipe or with --json, the usual events).")
        var live = false

        @OptionGroup var localSend: LocalSendOptions

        @Flag(help: "With --localsend: also ask every address of the local /24 over HTTPS (LocalSend's fallback when multicast is blocked).")
        var scan = false

        @OptionGroup var output: OutputOptions

        static let defaultPeerTimeout = 10.0

        func validate() throws {
            if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds") }
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
            if types, serviceOptions.service != nil { throw ValidationError("--types lists every service type; it takes no --service") }
            if domains, types || peer != nil || serviceOptions.service != nil {
                throw ValidationError("--domains lists browse domains; it does not go with --types, --peer or --service")
            }
            if peer != nil, types || rawType != nil {
                throw ValidationError("--peer looks for a nearby peer; it does not go with --types or a DNS-SD type")
            }
            if live, peer != nil || types || domains || rawType != nil {
                throw ValidationError("--live draws the peers of a browse; it does not go with --peer, --types, --domains or a DNS-SD type")
            }
        }

        private enum Outcome: Sendable {
            case done
            case timedOut
            case interrupted
            case failed(NearbyError)
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            if localSend.enabled(context) || scan {
                return try await reporting(context, verbose: output.verbose) {
                    guard localSend.enabled(context) else { throw NearbyError.invalidArgument("--scan sweeps the /24 for LocalSend devices: it goes with --localsend") }
                    try await LocalSendCommands.browse(context, timeout: timeout, count: count, peer: peer, scan: scan)
                }
            }
            if domains { return try await runDomains(context) }
            if types || rawType != nil { return try await runRaw(context) }
            try await reporting(context, verbose: output.verbose) {
                let asked = try peer.map(PeerQuery.init)
                let service = try serviceOptions.resolve(context)
                let selfID = try context.identity().peerID
                let browser = makeBrowser(
                    service, wideAreas: try serviceOptions.wideArea.resolveAll(context), link: serviceOptions.wideArea.link)
                guard let updates = try await Self.started({ try await browser.start() }) else { return }
                defer { browser.stop() }
                let limit = timeout ?? (peer == nil || now ? nil : Self.defaultPeerTimeout)
                for domain in browser.domains {
                    context.events.emit(Events.Browsing(service: service.name, domain: domain, stopsAfter: limit, now: now))
                }

                let progress = BrowseProgress()
                // A browse that ends by time may find nothing: then it names the types that are on the link.
                let others = peer == nil && (limit != nil || now) ? OtherTypes(skipping: service.registrationType) : nil
                others?.start()
                defer { _ = others?.finish() }
                if let asked {
                    return try await runPeer(
                        asked, updates, service: service, selfID: selfID, domains: browser.domains, limit: limit ?? Self.defaultPeerTimeout,
                        progress: progress, context: context)
                }
                let screen = live ? BrowseScreen(context: context, service: service.registrationType) : nil
                let outcome = await Self.untilStopped(
                    timeout: limit, settled: settledWait(progress, context: context), interrupted: Outcome.interrupted, timedOut: .timedOut,
                    firstLook: { await browser.firstLook() }
                ) {
                    guard let screen else { return await report(updates, service: service, selfID: selfID, progress: progress, context: context) }
                    return await screen.drawing {
                        await report(updates, service: service, selfID: selfID, progress: progress, screen: screen, context: context)
                    }
                }
                switch outcome {
                case .done, .interrupted: return
                case .timedOut:
                    reportNothingFound(
                        progress, service: service.registrationType, domains: browser.domains,
                        doctorService: service == .default ? nil : service.name, others: others?.finish() ?? [], context: context)
                case let .failed(error): throw error
                }
            }
        }

        /// What `start` returns, or nil when Ctrl-C comes first: a daemon that hangs holds a start
        /// for 25 s, and browse ends on Ctrl-C as it does once browsing (exit 0).
        static func started<T: Sendable>(_ start: @escaping @Sendable () async throws -> T) async throws -> T? {
            do {
                return try await interruptible("browsing") { try await start() }
            } catch let error as NearbyError where error.isCancellation {
                return nil
            }
        }

        /// Prints updates until the stream ends or --count is satisfied (with --live on a terminal,
        /// `screen` draws them instead).
        private func report(
            _ updates: AsyncStream<Browser.Update>, service: ServiceType, selfID: PeerID, progress: BrowseProgress,
            screen: BrowseScreen? = nil, context: CommandContext
        ) async -> Outcome {
            var found = 0
            for await update in updates {
                progress.heard()
                if let screen { screen.apply(update) }
                switch update {
                case let .found(discovered):
                    if screen == nil { context.events.emit(Events.PeerSeen(discovered, service: service, selfID: selfID)) }
                    RecentPeers(paths: context.paths).recordOnce(discovered, service: service, selfID: selfID)
                    if discovered.instance != selfID.rawValue { progress.found() }
                    found += 1
                    if found == count { return .done }
                case let .updated(discovered, changed):
                    guard screen == nil else { continue }
                    context.events.emit(Events.PeerUpdated(
                        changed: changed, seen: Events.PeerSeen(discovered, service: service, selfID: selfID)))
                case let .lost(discovered):
                    if screen == nil { context.events.emit(Events.Lost(discovered, service: service)) }
                case let .failed(error):
                    return .failed(error)
                }
            }
            return .interrupted
        }
    }
}
