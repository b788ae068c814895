/// Cuts DNS messages out of a TCP byte stream (RFC 1035 §4.2.2: a two-byte length, then that many
/// bytes) into a buffer that never holds more than one message: at most 2 + 65,535 bytes, whatever
/// and however much the other end sends. Bytes of a message already handed out are gone. Pure, so
/// the bound is tested without sockets.
package struct DNSStreamFramer: Sendable {
    /// The length's two bytes, while they are coming.
    private var header: [UInt8] = []
    /// The message being read, reserved to the length it announced (≤ 65,535).
    private var body: [UInt8] = []
    private var expected: Int?
    /// Complete messages handed out so far.
    package private(set) var messages = 0

    package init() {}

    /// The bytes this framer holds now (never more than 65,537).
    package var buffered: Int { header.count + body.count }

    /// Takes bytes from the front of `chunk` until one message is complete and returns it; nil when
    /// `chunk` ran out first (the bytes taken are kept for the next call). Call again with the rest
    /// of the chunk until it returns nil.
    package mutating func next(from chunk: inout ArraySlice<UInt8>) -> [UInt8]? {
        while !chunk.isEmpty {
            guard let expected else {
                header.append(chunk.removeFirst())
                if header.count == 2 {
                    let length = Int(header[0]) << 8 | Int(header[1])
                    header.removeAll(keepingCapacity: true)
                    self.expected = length
                    body = []
                    body.reserveCapacity(length)
                    if length == 0 { return finish() }
                }
                continue
            }
            let take = min(expected - body.count, chunk.count)
            body.append(contentsOf: chunk.prefix(take))
            chunk.removeFirst(take)
            if body.count == expected { return finish() }
        }
        return nil
    }

    private mutating func finish() -> [UInt8] {
        expected = nil
        messages += 1
        defer { body = [] }
        return body
    }
}
