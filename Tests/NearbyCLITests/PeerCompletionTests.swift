import ArgumentParser
import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyCore
@testable import NearbyIdentity
@testable import NearbyDiscovery

@Suite struct PeerCompletionTests {
    private func home(with entries: [RecentPeers.Entry]) throws -> [String: String] {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-complete-\(UUID().uuidString)").path
        try RecentPeers(paths: NearbyPaths(home: home)).record(entries)
        return ["NEARBY_HOME": home]
    }

    @Test func serviceComesFromTheCommandLineThenTheEnvironment() throws {
        var environment = try home(with: [
            .init(id: "a1", name: "Alice", service: "nearby", lastSeen: Date(timeIntervalSince1970: 2)),
            .init(id: "c3", name: "Carol", service: "chat", lastSeen: Date(timeIntervalSince1970: 1)),
        ])
        #expect(PeerCompletion.candidates(words: ["nearby", "invite", ""], environment: environment) == ["Alice", "a1"])
        #expect(PeerCompletion.candidates(words: ["nearby", "invite", "--service", "chat", ""], environment: environment) == ["Carol", "c3"])
        #expect(PeerCompletion.candidates(words: ["nearby", "send", "--service=chat", ""], environment: environment) == ["Carol", "c3"])
        environment["NEARBY_SERVICE"] = "chat"
        #expect(PeerCompletion.candidates(words: ["nearby", "invite", ""], environment: environment) == ["Carol", "c3"])
        #expect(PeerCompletion.candidates(words: ["nearby", "invite", "--service", "nearby", ""], environment: environment) == ["Alice", "a1"])
    }

    @Test func noFileNoCandidatesAndNothingCreated() {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-complete-\(UUID().uuidString)").path
        #expect(PeerCompletion.candidates(words: ["nearby", "invite", ""], environment: ["NEARBY_HOME": home]).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: home))
    }

    @Test func candidatesAreEscapedForTheShellThatExpandsThem() {
        #expect(PeerCompletion.escaped("a:b", for: .zsh) == #"a\:b"#)
        #expect(PeerCompletion.escaped("Bob's Pi", for: .bash) == #"Bob\'s\ Pi"#)
        #expect(PeerCompletion.escaped("$(reboot)", for: .bash) == #"\$\(reboot\)"#)
        #expect(PeerCompletion.escaped("Zoë-2", for: .bash) == "Zoë-2")
        #expect(PeerCompletion.escaped("$(reboot) a:b", for: .fish) == "$(reboot) a:b")
    }

    @Test(arguments: [
        ("invite", "positional@0"), ("accept", "positional@0"), ("accept", "--from"), ("send", "positional@0"),
        ("send-file", "positional@0"), ("stream", "positional@0"), ("stream", "--from"),
        ("disconnect", "positional@0"), ("browse", "--peer"), ("advertise", "--accept-from"),
    ])
    func everyPeerArgumentHasTheCustomCompletion(_ command: String, _ argument: String) {
        // What the generated scripts run; an argument without a custom completion is a parser error.
        let request = ["---completion", command, "--", argument, "2", "0", "nearby", command, ""]
        #expect(throws: (any Error).self) { _ = try Nearby.parseAsRoot(request) }
        do {
            _ = try Nearby.parseAsRoot(request)
        } catch {
            #expect(Nearby.exitCode(for: error) == .success)
        }
    }
}
