import ArgumentParser
import NearbyCore
import NearbyBase
import NearbyDiscovery

/// `browse --types` and `browse --service _http._tcp`: DNS-SD as it is on the link, beyond nearby's
/// own service type. The same stopping rules as a plain browse: --timeout, --count, SIGINT.
extension Nearby.Browse {
    enum RawOutcome: Sendable {
        case done
        case timedOut
        case interrupted
        case failed(NearbyError)
    }

    /// Whether this run is one of the raw modes, and which type it browses (nil with --types).
    var rawType: String? { serviceOptions.service.flatMap(DNSSDType.parse) }

    func runRaw(_ context: CommandContext) async throws {
        try await reporting(context, verbose: output.verbose) {
            let count = self.count
            let progress = BrowseProgress()
            let settled = settledWait(progress, context: context)
            let outcome: RawOutcome
            let looked: String
            if types {
                let browser = TypeBrowser()
                guard let updates = try await Self.started({ try await browser.start() }) else { return }
                defer { browser.stop() }
                looked = "the link (no DNS-SD service types)"
                context.events.emit(Events.Browsing(service: DNSSDType.metaQuery, domain: "local.", stopsAfter: timeout, now: now))
                outcome = await Self.untilStopped(timeout: timeout, settled: settled, interrupted: .interrupted, timedOut: .timedOut) {
                    await Self.reportTypes(updates, count: count, progress: progress, context: context)
                }
            } else if let type = rawType {
                let browser = Browser(registrationType: type)
                guard let updates = try await Self.started({ try await browser.start() }) else { return }
                defer { browser.stop() }
                looked = type
                context.events.emit(Events.Browsing(service: type, domain: browser.domain, stopsAfter: timeout, now: now))
                outcome = await Self.untilStopped(timeout: timeout, settled: settled, interrupted: .interrupted, timedOut: .timedOut) {
                    await Self.reportServices(updates, type: type, count: count, progress: progress, context: context)
                }
            } else {
                return
            }
            switch outcome {
            case let .failed(error): throw error
            case .timedOut: reportNothingFound(progress, service: looked, doctorService: nil, context: context)
            case .done, .interrupted: return
            }
        }
    }

    /// `--now`: the wait for the answers to stop, else nil.
    func settledWait(_ progress: BrowseProgress, context: CommandContext) -> (@Sendable () async -> Void)? {
        guard now else { return nil }
        let quiet = BrowseProgress.quiet(context.environment)
        return { await progress.waitUntilQuiet(quiet: quiet, first: quiet * 2) }
    }

    /// Runs `work` until it returns, SIGINT/SIGTERM (`interrupted`), or the timeout or `settled`
    /// (`--now`'s quiet time) ends it (`timedOut`).
    static func untilStopped<Outcome: Sendable>(
        timeout: Double?, settled: (@Sendable () async -> Void)? = nil, interrupted: Outcome, timedOut: Outcome,
        firstLook: @escaping @Sendable () async -> Bool = { true },
        _ work: @escaping @Sendable () async -> Outcome
    ) async -> Outcome {
        // Time ends a browse only after its first look worked: a failed one ends `work` instead.
        let afterFirstLook: @Sendable () async -> Void = {
            if await firstLook() { return }
            try? await Task.sleep(for: .seconds(86_400))
        }
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask { await work() }
            group.addTask {
                _ = await TerminationSignal.next()
                return interrupted
            }
            if let timeout {
                group.addTask {
                    try? await Task.sleep(for: .seconds(timeout))
                    await afterFirstLook()
                    return timedOut
                }
            }
            if let settled {
                group.addTask {
                    await settled()
                    await afterFirstLook()
                    return timedOut
                }
            }
            let first = await group.next() ?? timedOut
            group.cancelAll()
            return first
        }
    }

    static func reportTypes(
        _ updates: AsyncStream<TypeBrowser.Update>, count: Int?, progress: BrowseProgress, context: CommandContext
    ) async -> RawOutcome {
        var seen = Set<String>()
        for await update in updates {
            switch update {
            case let .type(type, instances):
                context.events.emit(Events.ServiceTypeSeen(type: type, instances: instances))
                if instances > 0, seen.insert(type).inserted { progress.found() } else { progress.heard() }
                if let count, seen.count >= count { return .done }
            case let .failed(error):
                return .failed(error)
            }
        }
        return .interrupted
    }

    static func reportServices(
        _ updates: AsyncStream<Browser.Update>, type: String, count: Int?, progress: BrowseProgress, context: CommandContext
    ) async -> RawOutcome {
        var found = 0
        for await update in updates {
            if case .found = update { progress.found() } else { progress.heard() }
            switch update {
            case let .found(instance):
                context.events.emit(Events.ServiceSeen(state: "found", type: type, peer: instance))
                found += 1
                if found == count { return .done }
            case let .updated(instance, _):
                context.events.emit(Events.ServiceSeen(state: "updated", type: type, peer: instance))
            case let .lost(instance):
                context.events.emit(Events.ServiceSeen(state: "lost", type: type, peer: instance))
            case let .failed(error):
                return .failed(error)
            }
        }
        return .interrupted
    }
}
