import Foundation
@testable import NearbyCore

/// Real nodes in this process for the loopback suites (HOST:PORT skips discovery): each with a home
/// of its own, its events in memory, its work running until it stops.
enum TestNodes {
    static func make(
        _ name: String, _ configure: (inout NodeConfiguration) -> Void = { _ in }
    ) async throws -> (node: Node, events: MemorySink, paths: NearbyPaths) {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-test-\(name)-\(UUID().uuidString)").path
        let paths = NearbyPaths(home: home)
        let identity = try IdentityStore(paths: paths).loadOrCreate(defaultName: name)
        var configuration = NodeConfiguration(service: .default)
        configure(&configuration)
        let sink = MemorySink()
        let node = try Node(identity: identity, configuration: configuration, paths: paths, events: sink)
        try await node.start()
        Task { await node.run() }  // ends when the node stops
        return (node, sink, paths)
    }

    /// Whether `sink` holds `count` lines containing `text` within about `seconds`.
    static func waitFor(_ sink: MemorySink, count: Int = 1, _ text: String, seconds: Double = 3) async -> Bool {
        for _ in 0..<Int(seconds * 100) {
            if sink.lines.filter({ $0.contains(text) }).count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
