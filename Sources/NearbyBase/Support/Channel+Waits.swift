import NIOCore

/// Waits until everything written to `channel` so far has reached the kernel: a write completes
/// only after those before it. Half-closing earlier would drop what is still queued. Bounded by
/// `limit` (a peer that stopped reading holds nobody up) and by the caller's cancellation.
package func flushed(_ channel: any Channel, _ barrier: some Sendable, within limit: Duration = .seconds(30)) async {
    let written = OneShot<Void>()
    channel.writeAndFlush(barrier).whenComplete { _ in written.settle(()) }
    _ = await written.wait(until: .now + limit)
}

/// Waits (at most `limit`, 30 s unless told; nil: for as long as it takes) until a connection has
/// closed: with both directions shut, NIO closes it once everything queued is written, so leaving
/// earlier could drop the stream's last bytes. False when it did not close in time, or the waiting
/// task was cancelled.
@discardableResult
package func closed(_ channel: any Channel, within limit: Duration? = .seconds(30)) async -> Bool {
    let done = OneShot<Void>()
    channel.closeFuture.whenComplete { _ in done.settle(()) }
    guard let limit else { return await done.wait() != nil }
    return await done.wait(until: .now + limit) != nil
}
