import Testing
@testable import NearbyCore
@testable import NearbyWire

/// The name a receiver says it saved a file under is a peer's word: only a plain name of sane length
/// that differs from the offered one reaches the sender's `file-sent`.
@Suite struct SavedNameTests {
    private func close(_ savedAs: String?) -> FrameBody.Close {
        FrameBody.Close(sha256: String(repeating: "0", count: 64), bytes: 1, savedAs: savedAs)
    }

    @Test func onlyAPlainOtherNameIsTaken() {
        #expect(close("x (1).txt").savedName(offered: "dB/x.txt") == "x (1).txt")
        #expect(close("x.txt").savedName(offered: "dB/x.txt") == nil)
        #expect(close(nil).savedName(offered: "x.txt") == nil)
        #expect(close("").savedName(offered: "x.txt") == nil)
        #expect(close("../../etc/passwd").savedName(offered: "x.txt") == nil)
        #expect(close(String(repeating: "a", count: 256)).savedName(offered: "x.txt") == nil)
    }
}
