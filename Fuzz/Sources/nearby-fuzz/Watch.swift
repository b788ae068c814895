import Foundation
@testable import NearbyBase
@testable import NearbyDNS
@testable import NearbyWatch

/// `nearby watch`: capture files, the IP/UDP headers of captured frames, mDNS messages, and the
/// rules that read them (decoded packets in, findings out).
enum WatchTargets {
    static let all = [
        FuzzTarget(name: "watch-pcap", run: pcap),
        FuzzTarget(name: "watch-ip", run: ip),
        FuzzTarget(name: "watch-mdns", run: mdns),
    ]

    /// A capture file through what `watch --file` does with it; every event it prints encodes.
    static func pcap(_ input: [UInt8]) {
        var engine = WatchEngine()
        guard var reader = try? PcapReader(PcapBytes(input)) else { return }
        var frames = 0
        while frames < 4096, let frame = try? reader.next() {
            frames += 1
            guard let datagram = FrameParser.datagram(frame.bytes[...], link: reader.link) else { continue }
            emit(engine.process(datagram, time: frame.time, interface: datagram.interfaceIndex.map { "if\($0)" }))
        }
        emit(engine.summary(dropped: 0))
    }

    /// One captured frame of each link type: read, or refused, never read past its end.
    static func ip(_ input: [UInt8]) {
        for link in [LinkType.ethernet, .rawIP, .linuxSLL, .ipv4, .ipv6, .linuxSLL2] {
            guard let datagram = FrameParser.datagram(input[...], link: link) else { continue }
            Fuzz.check(datagram.payload.count <= input.count, "a datagram of \(datagram.payload.count) bytes out of a frame of \(input.count)")
            var engine = WatchEngine()
            emit(engine.process(datagram, time: 1, interface: nil))
        }
    }

    /// Datagrams from several hosts to the rules: each `[length: 2][host: 1][gap: 1][payload]`, the
    /// host one of 8 addresses (v4 and v6), the gap the seconds since the last one in tenths.
    static func mdns(_ input: [UInt8]) {
        var engine = WatchEngine()
        var at = 0
        var time = 1_000.0
        while at + 4 <= input.count {
            let length = Int(input[at]) << 8 | Int(input[at + 1])
            let host = Int(input[at + 2] % 8)
            time += Double(input[at + 3]) / 10
            let end = min(input.count, at + 4 + length)
            let payload = Array(input[(at + 4)..<end])
            at = end
            let source = host < 4 ? "192.168.1.\(host + 1)" : "fe80::\(host)"
            let datagram = UDPDatagram(
                source: source, sourcePort: 5353, destination: host < 4 ? "224.0.0.251" : "ff02::fb", destinationPort: 5353,
                payload: payload, claimedLength: payload.count, fragmented: false, interfaceIndex: nil)
            let out = engine.process(datagram, time: time, interface: "eth0")
            emit(out)
        }
        emit(engine.summary(dropped: 0))
    }

    /// What watch prints: every event encodes as JSON.
    static func emit(_ outputs: [WatchEngine.Output]) {
        for output in outputs {
            switch output {
            case let .packet(packet): emit(packet)
            case let .finding(finding): emit(finding)
            }
        }
    }

    static func emit(_ body: some Encodable) {
        do {
            _ = try JSONEncoder().encode(body)
        } catch {
            Fuzz.violated("an event watch prints does not encode: \(error)")
        }
    }
}
