import NIOCore

/// The inbound parts of one connection, read by one task at a time (a server's connection loop and
/// the route it hands a body to; a client's kept connection and the request being answered on it).
package final class PartReader<Part: Sendable>: @unchecked Sendable {
    private var iterator: NIOAsyncChannelInboundStream<Part>.AsyncIterator
    package init(_ iterator: NIOAsyncChannelInboundStream<Part>.AsyncIterator) { self.iterator = iterator }

    /// The iterator is copied out and back (its state lives in NIO's shared producer), so no access
    /// to the stored property spans the suspension.
    package func next() async throws -> Part? {
        var current = iterator
        defer { iterator = current }
        return try await current.next()
    }
}
