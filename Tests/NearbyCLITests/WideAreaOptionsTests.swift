import ArgumentParser
import Foundation
import NearbyCore
import Testing
@testable import NearbyCLI
@testable import NearbyBase

@Suite struct WideAreaOptionsTests {
    private func context(_ environment: [String: String] = [:]) -> CommandContext {
        CommandContext(events: MemorySink(), environment: environment.merging(["NEARBY_HOME": "/nonexistent"]) { a, _ in a }, hostName: { "h" })
    }

    @Test func domainIsRepeatableAndAddsToTheLink() throws {
        let options = try WideAreaOptions.parse(["--domain", "a.test", "--domain", "b.test", "--domain", "a.test."])
        #expect(try options.resolveAll(context()).map(\.domainText) == ["a.test.", "b.test."])
        #expect(options.link)
        #expect(try !WideAreaOptions.parse(["--domain", "a.test", "--no-link"]).link)
    }

    @Test func theEnvironmentIsAListAndAnOptionOverridesIt() throws {
        let listed = context(["NEARBY_DOMAIN": "a.test, b.test c.test"])
        #expect(try WideAreaOptions.parse([]).resolveAll(listed).map(\.domainText) == ["a.test.", "b.test.", "c.test."])
        #expect(try WideAreaOptions.parse(["--domain", "d.test"]).resolveAll(listed).map(\.domainText) == ["d.test."])
    }

    @Test func noLinkNeedsADomain() throws {
        #expect(throws: NearbyError.self) { try WideAreaOptions.parse(["--no-link"]).resolveAll(context()) }
        #expect(try WideAreaOptions.parse([]).resolveAll(context()).isEmpty)
    }
}
