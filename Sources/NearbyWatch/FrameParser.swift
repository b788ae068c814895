/// How a captured frame begins: the link-layer header types of pcap files (tcpdump.org's
/// LINKTYPE_ values) and of a packet socket, which hands over IP packets without a link header.
package enum LinkType: UInt32, Sendable {
    case ethernet = 1
    case rawIP = 101
    case linuxSLL = 113
    case ipv4 = 228
    case ipv6 = 229
    case linuxSLL2 = 276
}

/// One UDP datagram to or from port 5353, read out of a captured frame.
package struct UDPDatagram: Sendable, Equatable {
    package var source: String
    package var sourcePort: UInt16
    package var destination: String
    package var destinationPort: UInt16
    /// The UDP payload: the DNS message (cut short when the IP packet is a first fragment).
    package var payload: [UInt8]
    /// What the UDP header says the payload is: more than `payload` when the datagram was fragmented.
    package var claimedLength: Int
    /// An IPv4 first fragment, or an IPv6 fragment header: the rest of the datagram is elsewhere.
    package var fragmented: Bool
    /// The interface index in a Linux SLL2 header (pcap files), if there was one.
    package var interfaceIndex: Int?

    /// The whole payload is here: not a first fragment, nor cut short by the capture's snap length.
    package var complete: Bool { payload.count == claimedLength }
}

/// Reads IP and UDP headers out of a captured frame. Every length is checked against what is there:
/// a frame from a hostile peer (or file) is read, or refused as `nil`, and never read past its end.
package enum FrameParser {
    package static let mdnsPort: UInt16 = 5353
    /// IPv6 extension headers followed before giving up (hop-by-hop, routing, destination options).
    static let maxExtensionHeaders = 8

    /// The datagram in `frame`, or nil when it is no UDP datagram to or from port 5353 (or is cut
    /// too short to say). A fragment after the first is nil: it has no UDP header (`FrameReader`
    /// puts fragments back together).
    package static func datagram(_ frame: ArraySlice<UInt8>, link: LinkType) -> UDPDatagram? {
        guard let (packet, interfaceIndex) = ipPacket(frame, link: link) else { return nil }
        var datagram: UDPDatagram?
        switch packet.first.map({ $0 >> 4 }) {
        case 4?: datagram = ipv4(packet)
        case 6?: datagram = ipv6(packet)
        default: return nil
        }
        datagram?.interfaceIndex = interfaceIndex
        return datagram
    }

    /// The IP packet in `frame` (its link header gone) and the interface index of an SLL2 header.
    static func ipPacket(_ frame: ArraySlice<UInt8>, link: LinkType) -> (ArraySlice<UInt8>, Int?)? {
        var frame = frame
        var interfaceIndex: Int?
        let ethertype: UInt16?
        switch link {
        case .rawIP, .ipv4, .ipv6:
            ethertype = nil
        case .ethernet:
            guard frame.count >= 14 else { return nil }
            var type = be16(frame, 12)
            var header = 14
            // Up to two VLAN tags (802.1Q, 802.1ad).
            for _ in 0..<2 where type == 0x8100 || type == 0x88A8 {
                guard frame.count >= header + 4 else { return nil }
                type = be16(frame, header + 2)
                header += 4
            }
            ethertype = type
            frame = frame.dropFirst(header)
        case .linuxSLL:
            guard frame.count >= 16 else { return nil }
            ethertype = be16(frame, 14)
            frame = frame.dropFirst(16)
        case .linuxSLL2:
            guard frame.count >= 20 else { return nil }
            ethertype = be16(frame, 0)
            interfaceIndex = Int(be32(frame, 4))
            frame = frame.dropFirst(20)
        }
        guard let first = frame.first else { return nil }
        switch ethertype {
        case 0x0800?: guard first >> 4 == 4 else { return nil }
        case 0x86DD?: guard first >> 4 == 6 else { return nil }
        case nil: break
        default: return nil
        }
        return (frame, interfaceIndex)
    }

    /// An IPv4 packet's header fields and the UDP datagram it carries (or its fragment of one).
    struct IPv4Parts {
        var source: String
        var destination: String
        var identification: UInt16
        var offset: Int
        var more: Bool
        var body: ArraySlice<UInt8>
    }

    static func ipv4Parts(_ packet: ArraySlice<UInt8>) -> IPv4Parts? {
        guard packet.count >= 20 else { return nil }
        let headerLength = Int(packet[packet.startIndex] & 0x0F) * 4
        let total = Int(be16(packet, 2))
        guard headerLength >= 20, total >= headerLength, packet.count >= headerLength else { return nil }
        guard packet[packet.startIndex + 9] == 17 else { return nil }
        let fragment = be16(packet, 6)
        // A frame may carry padding past the IP packet (Ethernet's minimum); a snapped one less.
        return IPv4Parts(
            source: address(packet.dropFirst(12).prefix(4)), destination: address(packet.dropFirst(16).prefix(4)),
            identification: be16(packet, 4), offset: Int(fragment & 0x1FFF) * 8, more: fragment & 0x2000 != 0,
            body: packet.dropFirst(headerLength).prefix(max(0, total - headerLength)))
    }

    static func ipv4(_ packet: ArraySlice<UInt8>) -> UDPDatagram? {
        guard let parts = ipv4Parts(packet), parts.offset == 0 else { return nil }  // a later fragment: no UDP header
        return udp(parts.body, source: parts.source, destination: parts.destination, fragmented: parts.more)
    }

    /// What follows an IPv6 header's chain of extension headers: UDP, or a fragment header (its
    /// offset, M flag, identification, and the next header of the fragmented part), or nil.
    enum IPv6Payload {
        case udp(ArraySlice<UInt8>)
        case fragment(offset: Int, more: Bool, identification: UInt32, next: UInt8, data: ArraySlice<UInt8>)
    }

    /// Walks hop-by-hop, routing and destination options headers from `next` to UDP or a fragment
    /// header (an atomic fragment, RFC 6946 — offset 0, no more — is walked through).
    static func ipv6Walk(next: UInt8, body: ArraySlice<UInt8>) -> IPv6Payload? {
        var next = next, body = body, hops = 0
        while next != 17 {
            hops += 1
            guard hops <= maxExtensionHeaders, body.count >= 8 else { return nil }
            switch next {
            case 0, 43, 60:  // hop-by-hop, routing, destination options: (length + 1) × 8 bytes
                let length = (Int(body[body.startIndex + 1]) + 1) * 8
                guard body.count >= length else { return nil }
                next = body[body.startIndex]
                body = body.dropFirst(length)
            case 44:  // fragment: 8 bytes
                let field = be16(body, 2)
                let offset = Int(field & 0xFFF8), more = field & 1 != 0, identification = be32(body, 4)
                next = body[body.startIndex]
                body = body.dropFirst(8)
                if offset != 0 || more {
                    return .fragment(offset: offset, more: more, identification: identification, next: next, data: body)
                }
            default:
                return nil
            }
        }
        return .udp(body)
    }

    static func ipv6(_ packet: ArraySlice<UInt8>) -> UDPDatagram? {
        guard packet.count >= 40 else { return nil }
        let source = address(packet.dropFirst(8).prefix(16))
        let destination = address(packet.dropFirst(24).prefix(16))
        let body = packet.dropFirst(40).prefix(Int(be16(packet, 4)))
        switch ipv6Walk(next: packet[packet.startIndex + 6], body: body) {
        case let .udp(udpBody)?:
            return udp(udpBody, source: source, destination: destination, fragmented: false)
        case let .fragment(offset, _, _, next, data)? where offset == 0:
            // The first fragment: the UDP header and the start of the payload.
            guard case let .udp(udpBody)? = ipv6Walk(next: next, body: data) else { return nil }
            return udp(udpBody, source: source, destination: destination, fragmented: true)
        default:
            return nil
        }
    }

    static func udp(_ body: ArraySlice<UInt8>, source: String, destination: String, fragmented: Bool) -> UDPDatagram? {
        guard body.count >= 8 else { return nil }
        let sourcePort = be16(body, 0), destinationPort = be16(body, 2)
        guard sourcePort == mdnsPort || destinationPort == mdnsPort else { return nil }
        let length = Int(be16(body, 4))
        guard length >= 8 else { return nil }
        let payload = Array(body.dropFirst(8).prefix(length - 8))
        return UDPDatagram(
            source: source, sourcePort: sourcePort, destination: destination, destinationPort: destinationPort,
            payload: payload, claimedLength: length - 8, fragmented: fragmented)
    }

    /// An IPv4 address dotted, an IPv6 one in RFC 5952's form (lowercase, the longest run of
    /// zero groups as `::`).
    package static func address(_ bytes: ArraySlice<UInt8>) -> String {
        // Every packet's source and destination: the IPv4 case written out (a flood makes it hot).
        if bytes.count == 4 {
            let at = bytes.startIndex
            return "\(bytes[at]).\(bytes[at + 1]).\(bytes[at + 2]).\(bytes[at + 3])"
        }
        let bytes = Array(bytes)
        guard bytes.count == 16 else { return bytes.map { String($0, radix: 16) }.joined(separator: ":") }
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var best = (start: -1, length: 0), run = (start: -1, length: 0)
        for (index, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (index, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }

    static func be16(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt16 {
        UInt16(bytes[bytes.startIndex + offset]) << 8 | UInt16(bytes[bytes.startIndex + offset + 1])
    }

    static func be32(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[bytes.startIndex + offset + $1]) }
    }
}
