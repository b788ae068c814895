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
    }

    /// An `RTM_NEWNEIGH` message as the kernel sends it in a dump: nlmsghdr, ndmsg, NDA_DST.
    static func neighbour(_ address: [UInt8], interface: UInt32, state: UInt16) -> [UInt8] {
        func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        let ndmsg = [UInt8(10), 0, 0, 0] + le(interface) + le(state) + [0, 0]
        let destination = le(UInt16(20)) + le(UInt16(1)) + address
        let body = ndmsg + destination
        return le(UInt32(16 + body.count)) + le(UInt16(28)) + le(UInt16(2)) + le(UInt32(1)) + le(UInt32(0)) + body
    }

    @Test func theIPv6NeighbourTableTellsAnAnswerFromSilence() {
        let reachable: [UInt8] = [0xfe, 0x80] + Array(repeating: 0, count: 13) + [2]
        let failed: [UInt8] = [0xfe, 0x80] + Array(repeating: 0, count: 13) + [0x99]
        let done: [UInt8] = [20, 0, 0, 0, 3, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let dump = Self.neighbour(reachable, interface: 7, state: 0x02) + Self.neighbour(failed, interface: 7, state: 0x20) + done
        let (entries, finished) = Neighbours.entries(inDump: dump[...])
        #expect(finished)
        #expect(entries == [Neighbours.Entry(address: reachable, interfaceIndex: 7, state: .answered),
                            Neighbours.Entry(address: failed, interfaceIndex: 7, state: .silent)])
        #expect(Neighbours.state(ofIPv6: "fe80::2", in: entries) == .answered)
        #expect(Neighbours.state(ofIPv6: "fe80::99", in: entries) == .silent)
        #expect(Neighbours.state(ofIPv6: "fe80::3", in: entries) == nil)
        // A zone that names another interface is another link.
        #expect(Neighbours.state(ofIPv6: "fe80::2%nonexistent0", in: entries) == nil)
        // Lengths past what is there end the reading, never a read out of bounds.
        var truncated = Self.neighbour(reachable, interface: 7, state: 0x02)
        truncated[0] = 200
        #expect(Neighbours.entries(inDump: truncated[...]).entries.isEmpty)
        #expect(Neighbours.entries(inDump: Array(truncated.prefix(30))[...]).entries.isEmpty)
    }

    @Test func aWaitWithALimitSaysWhenItEnds() {
        #expect(WaitEnds.words(5) == "for 5 s (Ctrl-C stops sooner)")
        #expect(WaitEnds.words(0.5) == "for 0.5 s (Ctrl-C stops sooner)")
        #expect(WaitEnds.words(nil) == "Ctrl-C to stop")
    }
}
