import Testing
@testable import NearbyWeb
@testable import NearbyTransfer

/// Zip entries whose names clean to one name are told apart as uploads are: the second gets ` (1)`
/// before its extension, in its last part only.
@Suite struct ZipNamesTests {
    @Test func namesThatCleanToOneGetACollisionSuffix() {
        let cleaned = ["d/a/b.txt", "d/a\\b.txt", "d/c.txt"].map(SafePath.relative)
        #expect(cleaned[0] == cleaned[1])
        #expect(WebShareItem.zipNames(cleaned) == ["d/a/b.txt", "d/a/b (1).txt", "d/c.txt"])
    }

    @Test func aThirdAndASuffixAlreadyTakenAreSkipped() {
        let names = WebShareItem.zipNames(["d/x.txt", "d/x (1).txt", "d/x.txt", "d/x.txt", "top"])
        #expect(names == ["d/x.txt", "d/x (1).txt", "d/x (2).txt", "d/x (3).txt", "top"])
        #expect(Set(names).count == names.count)
    }

    @Test func aLongNameStaysWithin255BytesWithItsExtension() {
        let long = String(repeating: "a", count: 251) + ".txt"
        let names = WebShareItem.zipNames(["d/" + long, "d/" + long])
        #expect(names[1].hasSuffix(" (1).txt"))
        #expect((names[1].split(separator: "/").last?.utf8.count ?? 0) <= 255)
    }
}
