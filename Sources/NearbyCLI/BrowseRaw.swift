import ArgumentParser
import NearbyCore

/// `browse --types` and `browse --service _http._tcp`: DNS-SD as it is on the link, beyond nearby's
/// own service type. The same stopping rules as a plain browse: --timeout, --count, SIGINT.
extension Nearby.Browse {
    enum RawOutcome: Sendable {
        case done
        case interrupted
        case failed(NearbyError)
    }

    /// Whether this run is one of the raw modes, and which type it browses (nil with --types).
    var rawType: String? { serviceOptions.service.flatMap(DNSSDType.parse) }

    func runRaw(_ context: CommandContext) async throws {
        try await reporting(context, verbose: output.verbose) {
            let count = self.count
            let outcome: RawOutcome
            if types {
                let browser = TypeBrowser()
                let updates = try browser.start()
                defer { browser.stop() }
                context.events.emit(Events.Browsing(service: DNSSDType.metaQuery, domain: "local."))
                outcome = await Self.untilStopped(timeout: timeout, interrupted: .interrupted, timedOut: .done) {
                    await Self.reportTypes(updates, count: count, context: context)
                }
            } else if let type = rawType {
                let browser = Browser(registrationType: type)
                let updates = try browser.start()
                defer { browser.stop() }
                context.events.emit(Events.Browsing(service: type, domain: browser.domain))
                outcome = await Self.untilStopped(timeout: timeout, interrupted: .interrupted, timedOut: .done) {
                    await Self.reportServices(updates, type: type, count: count, context: context)
                }
            } else {
                return
            }
            if case let .failed(error) = outcome { throw error }
        }
    }

    /// Runs `work` until it returns, SIGINT/SIGTERM (`interrupted`), or the timeout (`timedOut`).
    static func untilStopped<Outcome: Sendable>(
        timeout: Double?, interrupted: Outcome, timedOut: Outcome, _ work: @escaping @Sendable () async -> Outcome
    ) async -> Outcome {
        await withTaskGroup(of: Outcome.self) { group in
            group.addTask { await work() }
            group.addTask {
                _ = await TerminationSignal.next()
                return interrupted
            }
            if let timeout {
                group.addTask {
                    try? await Task.sleep(for: .seconds(timeout))
                    return timedOut
                }
            }
            let first = await group.next() ?? timedOut
            group.cancelAll()
            return first
        }
    }

    static func reportTypes(_ updates: AsyncStream<TypeBrowser.Update>, count: Int?, context: CommandContext) async -> RawOutcome {
        var seen = Set<String>()
        for await update in updates {
            switch update {
            case let .type(type, instances):
                context.events.emit(Events.ServiceTypeSeen(type: type, instances: instances))
                if instances > 0 { seen.insert(type) }
                if let count, seen.count >= count { return .done }
            case let .failed(error):
                return .failed(error)
            }
        }
        return .interrupted
    }

    static func reportServices(
        _ updates: AsyncStream<Browser.Update>, type: String, count: Int?, context: CommandContext
    ) async -> RawOutcome {
        var found = 0
        for await update in updates {
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
