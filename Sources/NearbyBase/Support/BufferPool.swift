import NIOCore

/// A few buffers a receiver's data goes through again and again, so a bulk transfer does not ask
/// the allocator for fresh memory for every read. A fresh buffer of a quarter of a MiB is fresh
/// pages, and each page costs a fault and a clear when first touched: on the lab's virtual machine
/// a tenth of a receiving node's time went to that (110,000 faults for a 1 GiB stream).
///
/// Whoever is done with a buffer (the stream's writer, the file's writer) gives it back; a buffer
/// nobody gives back is simply freed as usual. Value semantics are untouched: a buffer still
/// referenced elsewhere when it is taken again is copied on write by `ByteBuffer`, never shared.
/// The pool is bounded (`limit` buffers of at most `largest` bytes each), so an idle node holds at
/// most a few MiB.
package final class BufferPool: Sendable {
    /// The pool the frame splitter copies data frames into.
    package static let received = BufferPool(limit: 8, largest: 512 << 10)

    private let buffers = Locked<[ByteBuffer]>([])
    let limit: Int
    let largest: Int

    init(limit: Int, largest: Int) {
        self.limit = limit
        self.largest = largest
    }

    /// A buffer holding a copy of `bytes`' readable bytes, in memory used before when there is some
    /// big enough. Growing a smaller one would `realloc`, copying its old bytes (all of them stale)
    /// before the new ones: when none is big enough, a fresh buffer is made, and the smallest held
    /// one leaves the pool, so that what it holds follows the sizes the pieces have.
    package func copy(_ bytes: ByteBuffer) -> ByteBuffer {
        let needed = bytes.readableBytes
        // Taken straight out of the array: a second reference would make `clear` copy it.
        guard var buffer = buffers.withLock({ buffers -> ByteBuffer? in
            if let index = buffers.lastIndex(where: { $0.capacity >= needed }) { return buffers.remove(at: index) }
            if let smallest = buffers.indices.min(by: { buffers[$0].capacity < buffers[$1].capacity }) { buffers.remove(at: smallest) }
            return nil
        }) else { return ByteBuffer(bytes: bytes.readableBytesView) }
        buffer.clear()
        buffer.writeImmutableBuffer(bytes)
        return buffer
    }

    /// Takes `buffer` back for a later `copy`; the caller must not use it again.
    package func recycle(_ buffer: ByteBuffer) {
        guard buffer.capacity <= largest else { return }
        buffers.withLock { buffers in
            if buffers.count < limit { buffers.append(buffer) }
        }
    }

    /// Buffers held now (for tests).
    var count: Int { buffers.withLock { $0.count } }
}
