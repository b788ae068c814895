import Foundation
import NearbyCore
import NearbyBase
import NearbyDiscovery

/// What a browse has seen so far: when the last answer came (for `--now`, which stops once the
/// answers stop) and how many peers, instances or types it found (for the "nothing found" line).
final class BrowseProgress: Sendable {
    private let state: Locked<(last: ContinuousClock.Instant, found: Int)>
    let started = ContinuousClock.now

    init() { state = Locked((ContinuousClock.now, 0)) }

    /// An answer came: an update of any kind.
    func heard() { state.withLock { $0.last = .now } }

    /// An answer that counts as something found.
    func found() { state.withLock { $0.last = .now; $0.found += 1 } }

    var foundCount: Int { state.withLock { $0.found } }

    /// `--now`: returns once no answer came for `quiet` and at least `first` passed since the start
    /// (the first wave of answers, resolved, takes up to ~1.5 s to arrive).
    func waitUntilQuiet(quiet: Duration, first: Duration) async {
        while !Task.isCancelled {
            let deadline = max(started + first, state.withLock { $0.last } + quiet)
            if ContinuousClock.now >= deadline { return }
            try? await Task.sleep(until: deadline, clock: .continuous)
        }
    }

    /// The quiet time of `--now`: 1 s, or $NEARBY_BROWSE_QUIET_MS (a test knob).
    static func quiet(_ environment: [String: String]) -> Duration {
        environment["NEARBY_BROWSE_QUIET_MS"].flatMap(Int.init).map { .milliseconds(max($0, 1)) } ?? .seconds(1)
    }
}

extension Nearby.Browse {
    /// A browse that ends by time (--timeout, --now) having found nothing says so: on stderr for
    /// people, and as a `nothing-found` event for programs — with the next command to try.
    /// `others`: the other service types seen on the link meanwhile, named as `send` names them.
    func reportNothingFound(
        _ progress: BrowseProgress, service: String, domains: [String] = ["local."], doctorService: String?, others: [String] = [],
        context: CommandContext
    ) {
        guard progress.foundCount == 0 else { return }
        let seconds = Double((ContinuousClock.now - progress.started) / .milliseconds(100)).rounded() / 10
        let hint = (["nearby doctor"] + (doctorService.map { ["--service \($0)"] } ?? []) + PeerSearchReport.domainOptions(domains))
            .joined(separator: " ")
        if !context.humanOutput {
            context.events.emit(Events.NothingFound(service: service, seconds: seconds, hint: hint, types: others.isEmpty ? nil : others))
        }
        context.terminal?.line(
            "nothing found on \(service)\(PeerSearchReport.places(domains)) in \(Self.format(seconds)) s\(OtherTypes.sentence(others)) — try `\(hint)`",
            fd: 2)
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
