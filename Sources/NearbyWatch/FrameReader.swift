/// Frames in, UDP datagrams out, with IPv4 and IPv6 fragments put back together as the host's own
/// kernel does before its daemon reads them: an answer over the link's MTU is one datagram, seen
/// and judged whole. Bounded like the kernel's queue: at most `maxDatagrams` datagrams in pieces
/// and `maxBytes` held, each for at most `timeout` seconds (Linux's ipfrag_time); a datagram with
/// overlapping fragments (RFC 5722), too many of them, or over 65,535 bytes is dropped whole.
package struct FrameReader {
    package static let maxDatagrams = 64
    package static let maxBytes = 1 << 20
    package static let maxFragments = 64
    package static let timeout = 30.0

    struct Key: Hashable {
        var source: String
        var destination: String
        var identification: UInt32
        var version: UInt8
    }

    struct Pieces {
        var started: Double
        var fragments: [(offset: Int, data: [UInt8])] = []
        /// The fragmented part's length, once the last fragment (no more) is in.
        var total: Int?
        /// IPv6: the next header the first fragment gives for the reassembled part.
        var next: UInt8?
        var bytes: Int { fragments.reduce(0) { $0 + $1.data.count } }
    }

    private var pending: [Key: Pieces] = [:]
    private var held = 0
    /// Datagrams dropped unfinished: timed out, evicted for room, overlapping or too big.
    package private(set) var abandoned = 0

    package init() {}

    /// Datagrams in pieces now (for tests).
    package var inProgress: Int { pending.count }

    /// The datagram `frame` completes, or is; nil for a fragment still waiting, or for no datagram.
    package mutating func datagram(_ frame: ArraySlice<UInt8>, link: LinkType, time: Double) -> UDPDatagram? {
        expire(before: time - Self.timeout)
        guard let (packet, interfaceIndex) = FrameParser.ipPacket(frame, link: link) else { return nil }
        var datagram: UDPDatagram?
        switch packet.first.map({ $0 >> 4 }) {
        case 4?:
            guard let parts = FrameParser.ipv4Parts(packet) else { return nil }
            guard parts.more || parts.offset > 0 else { return FrameParser.ipv4(packet).map { with($0, interfaceIndex) } }
            let key = Key(source: parts.source, destination: parts.destination, identification: UInt32(parts.identification), version: 4)
            guard let whole = add(key, offset: parts.offset, more: parts.more, next: nil, data: parts.body, time: time) else { return nil }
            datagram = FrameParser.udp(whole.body[...], source: parts.source, destination: parts.destination, fragmented: true)
        case 6?:
            guard packet.count >= 40 else { return nil }
            let body = packet.dropFirst(40).prefix(Int(FrameParser.be16(packet, 4)))
            guard case let .fragment(offset, more, identification, next, data)? = FrameParser.ipv6Walk(next: packet[packet.startIndex + 6], body: body) else {
                return FrameParser.ipv6(packet).map { with($0, interfaceIndex) }
            }
            let source = FrameParser.address(packet.dropFirst(8).prefix(16))
            let destination = FrameParser.address(packet.dropFirst(24).prefix(16))
            let key = Key(source: source, destination: destination, identification: identification, version: 6)
            guard let whole = add(key, offset: offset, more: more, next: offset == 0 ? next : nil, data: data, time: time),
                  let first = whole.next, case let .udp(udpBody)? = FrameParser.ipv6Walk(next: first, body: whole.body[...]) else { return nil }
            datagram = FrameParser.udp(udpBody, source: source, destination: destination, fragmented: true)
        default:
            return nil
        }
        return datagram.map { with($0, interfaceIndex) }
    }

    private func with(_ datagram: UDPDatagram, _ index: Int?) -> UDPDatagram {
        var datagram = datagram
        datagram.interfaceIndex = index
        return datagram
    }

    /// Adds a fragment; the whole fragmented part once every byte of it is in.
    private mutating func add(_ key: Key, offset: Int, more: Bool, next: UInt8?, data: ArraySlice<UInt8>, time: Double) -> (body: [UInt8], next: UInt8?)? {
        var pieces = pending[key] ?? Pieces(started: time)
        if let old = pending[key] { held -= old.bytes }
        pending[key] = nil
        let end = offset + data.count
        let overlaps = pieces.fragments.contains { offset < $0.offset + $0.data.count && $0.offset < end }
        let pastEnd = pieces.total.map { end > $0 || !more && end != $0 } ?? false
        guard !overlaps, !pastEnd, end <= 65_535, pieces.fragments.count < Self.maxFragments, more ? data.count % 8 == 0 : true else {
            abandoned += 1
            return nil
        }
        if !more {
            guard pieces.fragments.allSatisfy({ $0.offset + $0.data.count <= end }) else { abandoned += 1; return nil }
            pieces.total = end
        }
        if offset == 0 { pieces.next = next }
        pieces.fragments.append((offset, Array(data)))
        if let total = pieces.total, pieces.bytes == total {
            var body = [UInt8](repeating: 0, count: total)
            for fragment in pieces.fragments { body.replaceSubrange(fragment.offset..<fragment.offset + fragment.data.count, with: fragment.data) }
            return (body, pieces.next)
        }
        // Room: the oldest datagram in pieces goes first.
        while !pending.isEmpty, pending.count >= Self.maxDatagrams || held + pieces.bytes > Self.maxBytes {
            guard let oldest = pending.min(by: { $0.value.started < $1.value.started }) else { break }
            held -= oldest.value.bytes
            pending[oldest.key] = nil
            abandoned += 1
        }
        guard pieces.bytes <= Self.maxBytes else { abandoned += 1; return nil }
        held += pieces.bytes
        pending[key] = pieces
        return nil
    }

    private mutating func expire(before oldest: Double) {
        guard !pending.isEmpty else { return }
        for (key, pieces) in pending where pieces.started < oldest {
            held -= pieces.bytes
            pending[key] = nil
            abandoned += 1
        }
    }
}
