import NIOCore

/// A request body's bytes on their way to a file, gathered into blocks of `size`: each write is
/// two hops through the file writer's queues, too many for every chunk NIO reads. A block is
/// allocated at its full size (grown by doubling, it would copy its bytes again); a piece as large
/// as a block is written as it came. Each byte is copied at most once.
package struct BodyBlocks: Sendable {
    package static let size = 256 << 10
    private var block = Self.empty()

    package init() {}

    private static func empty() -> ByteBuffer { ByteBufferAllocator().buffer(capacity: size) }

    /// Takes `piece`; returns what is due to be written now, in order.
    package mutating func add(_ piece: ByteBuffer) -> [ByteBuffer] {
        var piece = piece
        var due: [ByteBuffer] = []
        if block.readableBytes > 0, block.readableBytes + piece.readableBytes > Self.size {
            due.append(block)
            block = Self.empty()
        }
        if piece.readableBytes >= Self.size {
            due.append(piece)
        } else {
            block.writeBuffer(&piece)
        }
        return due
    }

    /// What is left to write at the body's (or the part's) end, if anything.
    package mutating func rest() -> ByteBuffer? {
        guard block.readableBytes > 0 else { return nil }
        defer { block = Self.empty() }
        return block
    }
}
