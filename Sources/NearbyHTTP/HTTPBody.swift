import NIOCore
import NIOHTTP1

/// The body of the request being answered, part by part: a route reads it whole (bounded), streams
/// it, or holds the connection open while it answers.
package struct HTTPBody: Sendable {
    package enum Failure: Error, Equatable {
        /// A second request head inside a body.
        case malformed
        /// The connection closed inside a body.
        case closed
    }

    let next: @Sendable () async throws -> HTTPServerRequestPart?
    /// Gives the connection `span` before its deadline (a request whose body was read, waiting for
    /// an answer that may take longer than the idle deadline: `nearby accept`).
    package let hold: @Sendable (Duration) -> Void

    package init(next: @escaping @Sendable () async throws -> HTTPServerRequestPart?, hold: @escaping @Sendable (Duration) -> Void = { _ in }) {
        self.next = next
        self.hold = hold
    }

    /// The next chunk, or nil at the end of the body.
    package func chunk() async throws -> ByteBuffer? {
        while let part = try await next() {
            switch part {
            case let .body(buffer): return buffer
            case .end: return nil
            case .head: throw Failure.malformed
            }
        }
        throw Failure.closed
    }

    /// The whole body, or nil when it is longer than `limit` (what was read is dropped).
    package func whole(limit: Int) async throws -> [UInt8]? {
        var bytes: [UInt8] = []
        while var buffer = try await chunk() {
            guard bytes.count + buffer.readableBytes <= limit else { return nil }
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return bytes
    }
}
