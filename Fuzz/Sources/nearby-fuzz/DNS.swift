@testable import NearbyDNS
@testable import NearbyDiscovery

/// The DNS codec (wide-area DNS-SD, and watch's mDNS), TSIG, DNS over TCP, DNS-SD TXT records.
enum DNSTargets {
    static let all = [
        FuzzTarget(name: "dns-message", run: message),
        FuzzTarget(name: "dns-tsig", run: tsig),
        FuzzTarget(name: "dns-stream", run: stream),
        FuzzTarget(name: "dns-txt", run: txt),
    ]

    /// decode(encode(m)) == m for every message that decodes, compressed or not.
    static func message(_ input: [UInt8]) {
        guard let decoded = try? DNSMessage.decode(input) else { return }
        for compress in [true, false] {
            guard let bytes = try? decoded.encode(compress: compress) else { continue }
            do {
                let again = try DNSMessage.decode(bytes)
                Fuzz.check(again == decoded, "decode(encode(m)) != m (compress: \(compress))")
            } catch {
                Fuzz.violated("a message nearby encoded does not decode: \(error) (compress: \(compress))")
            }
        }
    }

    static let key = TSIGKey(name: (try? DNSName("nearby-fuzz.key.")) ?? .root, secret: Array(repeating: 7, count: 32))

    /// A signed answer as a server might send it: verify never traps; what we sign, we verify; a
    /// byte changed in what we signed is refused.
    static func tsig(_ input: [UInt8]) {
        let now: UInt64 = 1_700_000_000
        _ = try? TSIG.verify(input, key: key, now: now)
        _ = try? TSIG.verify(input, key: key, now: now, requestMAC: Array(repeating: 1, count: 32))
        guard let message = try? DNSMessage.decode(input), let bytes = try? message.encode(),
              let signed = try? TSIG.sign(bytes, key: key, time: now) else { return }
        do {
            _ = try TSIG.verify(signed.bytes, key: key, now: now)
        } catch {
            Fuzz.violated("a message nearby signed does not verify: \(error)")
        }
    }

    /// DNS over TCP: the two-byte length framing gives the same messages in pieces as whole.
    static func stream(_ input: [UInt8]) {
        let (whole, pieces) = Fuzz.pieces(input)
        func messages(_ reads: [ArraySlice<UInt8>]) -> [[UInt8]] {
            var framer = DNSStreamFramer()
            var out: [[UInt8]] = []
            for read in reads {
                var chunk = read
                while let message = framer.next(from: &chunk) { out.append(message) }
            }
            return out
        }
        let inPieces = messages(pieces)
        Fuzz.check(inPieces == messages([whole[...]]), "DNS over TCP framed \(inPieces.count) messages in pieces, not as whole")
        for message in inPieces { _ = try? DNSMessage.decode(message) }
    }

    /// A TXT record from the network: decoded without a trap, and a decoded record nearby would
    /// publish again decodes to itself.
    static func txt(_ input: [UInt8]) {
        let record = TXTRecord.decode(input)
        _ = TXTRecord.decode(input[...].dropFirst())
        guard let wire = try? record.encode() else { return }
        let again = TXTRecord.decode(wire)
        Fuzz.check(again == record, "TXT decode(encode(r)) != r: \(record) became \(again)")
    }
}
