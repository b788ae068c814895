import Testing
@testable import NearbyDNS

@Suite struct DNSStreamFramerTests {
    @Test func messagesComeOutWholeFromAnyCutOfTheStream() {
        let first: [UInt8] = [1, 2, 3]
        let second: [UInt8] = Array(repeating: 9, count: 300)
        let stream = [0, 3] + first + [0, 0] + [1, 44] + second
        for cut in 1...stream.count {
            var framer = DNSStreamFramer()
            var out: [[UInt8]] = []
            var index = 0
            while index < stream.count {
                var chunk = stream[index..<min(stream.count, index + cut)]
                index += cut
                while let message = framer.next(from: &chunk) { out.append(message) }
                #expect(chunk.isEmpty)
            }
            #expect(out == [first, [], second])
            #expect(framer.buffered == 0)
        }
    }

    @Test func endlessLargeMessagesNeverHoldMoreThanOne() {
        var framer = DNSStreamFramer()
        let frame = [0xFF, 0xFF] + [UInt8](repeating: 0, count: 65535)
        var most = 0
        for _ in 0..<50 {
            var offset = 0
            while offset < frame.count {
                var chunk = frame[offset..<min(frame.count, offset + 8192)]
                offset += 8192
                while let message = framer.next(from: &chunk) { #expect(message.count == 65535) }
                most = max(most, framer.buffered)
            }
        }
        #expect(most <= 65537)
        #expect(framer.messages == 50)
    }
}
