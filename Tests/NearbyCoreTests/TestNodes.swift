import Foundation
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyIdentity

/// Real nodes in this process for the loopback suites (HOST:PORT skips discovery): each with a home
/// of its own, its events in memory, its work running until it stops.
///
/// Waits a test expects to succeed are generous and end as soon as they do (`patience`): these
/// suites run beside each other on loaded two-core machines, where a TLS handshake between two
/// nodes of one debug build was seen to take seconds. Only a wait that is meant to expire is short.
/// The suites of real nodes have a time limit of 5 minutes a test: a test that hangs is named and
/// cancelled there, not by the whole run's timeout.
enum TestNodes {
    /// Seconds an invitation, a send or an awaited event may take before the test gives up.
    static let patience: Double = 120

    static func make(
        _ name: String, _ configure: (inout NodeConfiguration) -> Void = { _ in }
    ) async throws -> (node: Node, events: MemorySink, paths: NearbyPaths) {
        relaxDeadlines()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-test-\(name)-\(UUID().uuidString)").path
        let paths = NearbyPaths(home: home)
        let identity = try IdentityStore(paths: paths).loadOrCreate(defaultName: name)
        var configuration = NodeConfiguration(service: .default)
        // A link we did not open has 5 s to invite: a loaded machine's inviter can miss that.
        configuration.invitationDeadline = .seconds(patience)
        configure(&configuration)
        let sink = MemorySink()
        let node = try Node(identity: identity, configuration: configuration, paths: paths, events: sink)
        try await node.start()
        Task { await node.run() }  // ends when the node stops
        return (node, sink, paths)
    }

    /// The process-wide deadlines a loaded machine misses (the handshake's and a TCP connection's:
    /// 10 s each; a link's silence, 6 s; read once from the environment) become `patience`, before the first node of this
    /// process uses them; `scripts/test` sets the same variables for the whole run. A variable the
    /// caller set is kept.
    static func relaxDeadlines() {
        setenv("NEARBY_HANDSHAKE_DEADLINE", "\(Int(patience))", 0)
        setenv("NEARBY_CONNECT_TIMEOUT_MS", "\(Int(patience * 1000))", 0)
        setenv("NEARBY_SILENCE_LIMIT", "\(Int(patience))", 0)
    }

    /// Whether `sink` holds `count` lines containing `text` within `seconds` (it returns as soon as
    /// it does; the bound is by the clock, not a count of naps, which a loaded machine stretches).
    static func waitFor(_ sink: MemorySink, count: Int = 1, _ text: String, seconds: Double = patience) async -> Bool {
        await eventually(within: seconds) { sink.lines.filter { $0.contains(text) }.count >= count }
    }

    /// Whether `condition` holds within `seconds`, polled every 10 ms; true as soon as it does.
    static func eventually(within seconds: Double = patience, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while !condition() {
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(10))) != nil else { return condition() }
        }
        return true
    }
}
