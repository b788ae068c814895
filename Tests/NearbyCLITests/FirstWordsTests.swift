import Foundation
import Testing
@testable import NearbyCLI
@testable import NearbyBase

/// The pure parts of issue 57's small words: the option an unknown one stands for, the neighbour
/// table's answer, how a wait with a limit says it ends.
@Suite struct FirstWordsTests {
    @Test func anUnknownOptionGetsTheOptionItBegins() {
        let options = OptionSuggestion.longOptions(of: "browse") ?? []
        #expect(options.contains("--timeout") && options.contains("--live"))
        #expect(OptionSuggestion.suggestion(for: "--time", among: options) == "--timeout")
        #expect(OptionSuggestion.suggestion(for: "--tiemout", among: options) == "--timeout")
        #expect(OptionSuggestion.suggestion(for: "--zzzzzzzz", among: options) == nil)
        let theirs = "Error: Unknown option '--time'. Did you mean '--live'?\nUsage: nearby browse"
        #expect(OptionSuggestion.corrected(theirs, arguments: ["browse", "--time", "5"])
            == "Error: Unknown option '--time'. Did you mean '--timeout'?\nUsage: nearby browse")
        #expect(OptionSuggestion.corrected("Error: Missing value", arguments: ["browse"]) == "Error: Missing value")
    }

    @Test func theNeighbourTableTellsAnAnswerFromSilence() {
        let table = """
            IP address       HW type     Flags       HW address            Mask     Device
            10.99.0.1        0x1         0x2         02:00:00:00:00:01     *        nb0
            10.99.0.99       0x1         0x0         00:00:00:00:00:00     *        nb0
            """
        #expect(Neighbours.state(of: "10.99.0.1", in: table) == .answered)
        #expect(Neighbours.state(of: "10.99.0.99", in: table) == .silent)
        #expect(Neighbours.state(of: "10.99.0.9", in: table) == nil)
        #expect(Neighbours.state(of: "fe80::1", table: "/nonexistent") == nil)
    }

    @Test func aWaitWithALimitSaysWhenItEnds() {
        #expect(WaitEnds.words(5) == "for 5 s (Ctrl-C stops sooner)")
        #expect(WaitEnds.words(0.5) == "for 0.5 s (Ctrl-C stops sooner)")
        #expect(WaitEnds.words(nil) == "Ctrl-C to stop")
    }
}
