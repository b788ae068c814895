import Testing
@testable import NearbyWeb

/// The files each browser's address may leave in a drop box: at most `perAddress`, given back when
/// one does not land; a table of at most `addresses` addresses.
@Suite struct WebUploadCountsTests {
    @Test func anAddressIsCappedAndOthersAreNot() {
        let counts = WebUploadCounts(perAddress: 3)
        #expect((0..<5).map { _ in counts.reserve("10.0.0.2") } == [true, true, true, false, false])
        #expect(counts.count("10.0.0.2") == 3)
        #expect(counts.reserve("10.0.0.3"))
    }

    @Test func aFileThatDidNotLandIsGivenBack() {
        let counts = WebUploadCounts(perAddress: 1)
        #expect(counts.reserve("a"))
        #expect(!counts.reserve("a"))
        counts.release("a")
        #expect(counts.count("a") == 0)
        #expect(counts.reserve("a"))
        counts.release("never-counted")
        #expect(counts.count("never-counted") == 0)
    }

    @Test func theTableOfAddressesIsCapped() {
        let counts = WebUploadCounts(perAddress: 10, addresses: 2)
        #expect(counts.reserve("a"))
        #expect(counts.reserve("b"))
        #expect(!counts.reserve("c"))
        #expect(counts.reserve("a"))
        counts.release("b")
        #expect(counts.reserve("c"))
    }

    @Test func theEnvironmentSetsTheCap() {
        #expect(WebUploadCounts.from(environment: ["NEARBY_WEB_FILES_PER_ADDRESS": "5"]).perAddress == 5)
        #expect(WebUploadCounts.from(environment: [:]).perAddress == 1000)
    }
}
