import NearbyDNS
import PropertyBased
import Testing
@testable import NearbyWatch

@Suite struct CaptureFormatTests {
    static let payload = try! Make.query("_nearby._tcp.local.").encode()

    @Test func ethernetIPv4() throws {
        let datagram = try #require(FrameParser.datagram(Make.ethernetIPv4(Self.payload)[...], link: .ethernet))
        #expect(datagram.source == "10.99.0.2" && datagram.destination == "224.0.0.251")
        #expect(datagram.sourcePort == 5353 && datagram.payload == Self.payload && datagram.complete)
        // Ethernet's padding after a short IP packet is not payload.
        let padded = try #require(FrameParser.datagram((Make.ethernetIPv4(Self.payload) + [0, 0, 0, 0])[...], link: .ethernet))
        #expect(padded.payload == Self.payload)
    }

    @Test func ipv6AndCookedHeaders() throws {
        let packet = Make.ipv6(Self.payload)
        let raw = try #require(FrameParser.datagram(packet[...], link: .rawIP))
        #expect(raw.source == "fe80::2" && raw.destination == "ff02::fb")
        let sll: [UInt8] = [0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0, 0x86, 0xDD]
        #expect(FrameParser.datagram((sll + packet)[...], link: .linuxSLL)?.payload == Self.payload)
        let sll2: [UInt8] = [0x86, 0xDD, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0]
        let cooked = try #require(FrameParser.datagram((sll2 + packet)[...], link: .linuxSLL2))
        #expect(cooked.interfaceIndex == 3)
        // An Ethernet type that says IPv4 over an IPv6 packet is refused.
        #expect(FrameParser.datagram(([UInt8](repeating: 0, count: 12) + [0x08, 0x00] + packet)[...], link: .ethernet) == nil)
    }

    @Test func fragmentsAreTold() throws {
        let first = try #require(FrameParser.datagram(Make.ethernetIPv4(Self.payload, flags: 0x2000)[...], link: .ethernet))
        #expect(first.fragmented)
        #expect(FrameParser.datagram(Make.ethernetIPv4(Self.payload, flags: 0x0010)[...], link: .ethernet) == nil)
        // Another port is not mDNS.
        var other = Make.ethernetIPv4(Self.payload, sourcePort: 53)
        other[36] = 0; other[37] = 53
        #expect(FrameParser.datagram(other[...], link: .ethernet) == nil)
    }

    @Test func everyCutFrameIsReadOrRefused() {
        for frame in [Make.ethernetIPv4(Self.payload), Make.ipv6(Self.payload)] {
            for length in 0...frame.count {
                for link in [LinkType.ethernet, .rawIP, .linuxSLL, .linuxSLL2] {
                    if let datagram = FrameParser.datagram(frame.prefix(length), link: link) {
                        #expect(datagram.payload.count <= datagram.claimedLength)
                    }
                }
            }
        }
    }

    @Test func randomFramesNeverCrash() async {
        await propertyCheck(count: 3000, input: Generator(run: { rng -> [UInt8] in
            var frame = Bool.random(using: &rng) ? Make.ethernetIPv4(Self.payload) : Make.ipv6(Self.payload)
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                frame[Int.random(in: 0..<frame.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            return Array(frame.prefix(Int.random(in: 0...frame.count, using: &rng)))
        })) { frame in
            for link in [LinkType.ethernet, .rawIP, .linuxSLL, .linuxSLL2] { _ = FrameParser.datagram(frame[...], link: link) }
        }
    }

    @Test func pcapInBothByteOrdersAndResolutions() throws {
        for bigEndian in [false, true] {
            for nanoseconds in [false, true] {
                let file = Make.pcap([(1_700_000_000.25, Make.ethernetIPv4(Self.payload)), (1_700_000_001.5, [1, 2, 3])],
                                     bigEndian: bigEndian, nanoseconds: nanoseconds)
                var reader = try PcapReader(PcapBytes(file))
                #expect(reader.link == .ethernet)
                let first = try #require(try reader.next())
                #expect(abs(first.time - 1_700_000_000.25) < 1e-6)
                #expect(FrameParser.datagram(first.bytes[...], link: reader.link)?.payload == Self.payload)
                #expect(try reader.next()?.bytes == [1, 2, 3])
                #expect(try reader.next() == nil)
            }
        }
    }

    @Test func badFilesAreClearErrors() throws {
        func reason(_ bytes: [UInt8]) -> String? {
            do {
                var reader = try PcapReader(PcapBytes(bytes))
                while try reader.next() != nil {}
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason([0x0A, 0x0D, 0x0D, 0x0A] + [UInt8](repeating: 0, count: 20))?.contains("pcapng") == true)
        #expect(reason(Array("hello, this is a text file".utf8))?.contains("not a pcap file") == true)
        #expect(reason([])?.contains("cut short") == true)
        #expect(reason(Make.pcap([], link: 105))?.contains("link type 105") == true)
        let good = Make.pcap([(1, Make.ethernetIPv4(Self.payload))])
        #expect(reason(Array(good.dropLast(3)))?.contains("cut short") == true)
        var huge = Make.pcap([(1, [0])])
        huge[32] = 0xFF; huge[33] = 0xFF; huge[34] = 0xFF; huge[35] = 0x7F
        #expect(reason(huge)?.contains("over 262144") == true)
    }

    @Test func randomFilesNeverCrash() async {
        let good = Make.pcap([(1, Make.ethernetIPv4(Self.payload)), (2, Make.ipv6(Self.payload))])
        await propertyCheck(count: 2000, input: Generator(run: { rng -> [UInt8] in
            var file = good
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                file[Int.random(in: 0..<file.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            return Array(file.prefix(Int.random(in: 0...file.count, using: &rng)))
        })) { file in
            guard var reader = try? PcapReader(PcapBytes(file)) else { return }
            var count = 0
            while let frame = try? reader.next(), count < 10 {
                count += 1
                _ = FrameParser.datagram(frame.bytes[...], link: reader.link)
            }
        }
    }
}
