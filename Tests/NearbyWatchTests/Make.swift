import NearbyDNS
@testable import NearbyWatch

/// Packets built for the tests, as avahi would send them.
enum Make {
    static func name(_ text: String) -> DNSName { try! DNSName(text) }

    static func record(_ owner: String, _ type: DNSType, ttl: UInt32 = 120, _ data: RData, flush: Bool = true) -> DNSRecord {
        DNSRecord(name: name(owner), type: type, rrClass: DNSClass(rawValue: flush ? 0x8001 : 1), ttl: ttl, data: data)
    }

    static func a(_ owner: String, _ address: [UInt8], ttl: UInt32 = 120, flush: Bool = true) -> DNSRecord {
        record(owner, .a, ttl: ttl, .a(address), flush: flush)
    }

    static func ptr(_ type: String, _ instance: String, ttl: UInt32 = 4500) -> DNSRecord {
        record(type, .ptr, ttl: ttl, .ptr(name(instance)), flush: false)
    }

    static func srv(_ instance: String, port: UInt16, target: String, ttl: UInt32 = 120) -> DNSRecord {
        record(instance, .srv, ttl: ttl, .srv(priority: 0, weight: 0, port: port, target: name(target)))
    }

    static func response(_ answers: [DNSRecord], additional: [DNSRecord] = []) -> DNSMessage {
        var message = DNSMessage(id: 0)
        message.isResponse = true
        message.authoritative = true
        message.answers = answers
        message.additional = additional
        return message
    }

    static func query(_ owner: String, _ type: DNSType = .ptr, unicast: Bool = false) -> DNSMessage {
        var message = DNSMessage(id: 0)
        message.questions = [DNSQuestion(name: name(owner), type: type, qClass: DNSClass(rawValue: unicast ? 0x8001 : 1))]
        return message
    }

    static func datagram(_ message: DNSMessage, from source: String, port: UInt16 = 5353, to destination: String = "224.0.0.251", toPort: UInt16 = 5353) -> UDPDatagram {
        let payload = try! message.encode()
        return UDPDatagram(
            source: source, sourcePort: port, destination: destination, destinationPort: toPort, payload: payload,
            claimedLength: payload.count, fragmented: false)
    }

    /// An Ethernet frame with an IPv4 UDP datagram.
    static func ethernetIPv4(_ payload: [UInt8], source: [UInt8] = [10, 99, 0, 2], sourcePort: UInt16 = 5353, flags: UInt16 = 0) -> [UInt8] {
        let udpLength = 8 + payload.count
        let total = 20 + udpLength
        var frame: [UInt8] = [1, 0, 0x5E, 0, 0, 0xFB, 2, 0, 0, 0, 0, 2, 0x08, 0x00]
        frame += [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 1, UInt8(flags >> 8), UInt8(flags & 0xFF), 255, 17, 0, 0]
        frame += source + [224, 0, 0, 251]
        frame += [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF), 0x14, 0xE9, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0]
        return frame + payload
    }

    /// An IPv6 UDP datagram (no link header).
    static func ipv6(_ payload: [UInt8], source: [UInt8] = [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [2]) -> [UInt8] {
        let udpLength = 8 + payload.count
        var packet: [UInt8] = [0x60, 0, 0, 0, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 17, 255]
        packet += source + [0xFF, 0x02] + [UInt8](repeating: 0, count: 13) + [0xFB]
        packet += [0x14, 0xE9, 0x14, 0xE9, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0]
        return packet + payload
    }

    /// A classic pcap file of `frames`, little- or big-endian, in microseconds or nanoseconds.
    static func pcap(_ frames: [(time: Double, bytes: [UInt8])], link: UInt32 = 1, bigEndian: Bool = false, nanoseconds: Bool = false) -> [UInt8] {
        func u32(_ value: UInt32) -> [UInt8] {
            let be = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            return bigEndian ? be : be.reversed()
        }
        func u16(_ value: UInt16) -> [UInt8] { bigEndian ? [UInt8(value >> 8), UInt8(value & 0xFF)] : [UInt8(value & 0xFF), UInt8(value >> 8)] }
        var file = u32(nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4) + u16(2) + u16(4) + u32(0) + u32(0) + u32(262_144) + u32(link)
        for frame in frames {
            let seconds = UInt32(frame.time.rounded(.down))
            let fraction = UInt32(((frame.time - Double(seconds)) * (nanoseconds ? 1e9 : 1e6)).rounded())
            file += u32(seconds) + u32(fraction) + u32(UInt32(frame.bytes.count)) + u32(UInt32(frame.bytes.count)) + frame.bytes
        }
        return file
    }
}
