import NIOCore
import NearbyBase

/// Cuts a byte stream into lines for `send --lines`: each line (without its "\n") is one message.
/// A line still being read is buffered up to `limit` bytes; a longer one is refused rather than
/// buffered, so memory stays bounded whatever stdin holds.
package struct LineSplitter: Sendable {
    package let limit: Int
    private var pending = ByteBuffer()

    package init(limit: Int) { self.limit = limit }

    /// The complete lines `chunk` finishes, in order.
    package mutating func append(_ chunk: ByteBuffer) throws(NearbyError) -> [ByteBuffer] {
        var chunk = chunk
        var lines: [ByteBuffer] = []
        while let newline = chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - chunk.readerIndex
            guard var piece = chunk.readSlice(length: length) else { break }
            chunk.moveReaderIndex(forwardBy: 1)
            if pending.readableBytes > 0 {
                pending.writeBuffer(&piece)
                piece = pending
                pending = ByteBuffer()
            }
            guard piece.readableBytes <= limit else { throw .messageTooLarge(bytes: piece.readableBytes, limit: limit) }
            lines.append(piece)
        }
        if chunk.readableBytes > 0 {
            guard pending.readableBytes + chunk.readableBytes <= limit else {
                throw .messageTooLarge(bytes: pending.readableBytes + chunk.readableBytes, limit: limit)
            }
            pending.writeBuffer(&chunk)
        }
        return lines
    }

    /// At the end of the input: the last line when it had no "\n".
    package mutating func finish() -> ByteBuffer? {
        defer { pending = ByteBuffer() }
        return pending.readableBytes > 0 ? pending : nil
    }
}
