import NIOCore
import NearbyBase

/// Settles `gone` when the client of a control connection has gone: its input ended (a client
/// sends its request, then nothing but a stream's records, and half-closes only once it has read its
/// answer) or the connection closed. Whatever the client waited for goes with it — a stream listener
/// leaves the node's waiting listeners at once, before another stream could be given to it.
final class ClientGoneWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let gone: OneShot<Void>

    init(_ gone: OneShot<Void>) { self.gone = gone }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { gone.settle(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        gone.settle(())
        context.fireChannelInactive()
    }
}

/// A control connection and the signal that its client has gone (`ClientGoneWatcher`).
package struct ControlConnection: Sendable {
    package let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    package let gone: OneShot<Void>
}
