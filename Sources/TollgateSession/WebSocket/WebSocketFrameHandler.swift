import NIOCore
import NIOWebSocket

/// The channel end of a WebSocket task, behind NIOWebSocket's frame decoder and encoder: frames
/// and the connection's end go to the task; the task's frames go out masked. The socket is read
/// only while the task wants frames (the channel's `autoRead` is off), so a server that sends
/// faster than the application receives is slowed by TCP flow control.
///
/// Events that arrive before the task attached (the frames the server sent right behind its
/// 101) are held and handed over at ``attach(_:)``. Touched only on the channel's event loop.
final class WebSocketFrameHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    enum Event: Sendable {
        case frame(WebSocketFrame)
        case decodingFailed(NIOWebSocketError)
        /// A compressed message would not decompress, or would be too big (permessage-deflate).
        case inflationFailed(MessageInflater.Failure)
        case closed
    }

    private var context: ChannelHandlerContext?
    private var receiver: (@Sendable (Event) -> Void)?
    private var held: [Event] = []
    private var readDemand = false
    private var readInFlight = false
    private var lastWrite: EventLoopFuture<Void>?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Starts handing events to `receiver` (the ones held first).
    func attach(_ receiver: @escaping @Sendable (Event) -> Void) {
        self.receiver = receiver
        let waiting = held
        held = []
        for event in waiting { receiver(event) }
        issueRead()
    }

    func setReadDemand(_ demand: Bool) {
        readDemand = demand
        issueRead()
    }

    /// Writes a frame with a fresh masking key (RFC 6455 §5.3: every client frame is masked).
    func write(_ frame: WebSocketFrame) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        var frame = frame
        frame.maskKey = .random()
        let written = context.writeAndFlush(wrapOutboundOut(frame))
        lastWrite = written
        return written
    }

    /// Closes the connection once the frames written so far are out.
    func closeAfterWrites() {
        guard let context else { return }
        guard let lastWrite else {
            context.close(promise: nil)
            return
        }
        // On this loop: the write completes here, and closing goes through the channel.
        let channel = context.channel
        lastWrite.whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deliver(.frame(unwrapInboundIn(data)))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readInFlight = false
        issueRead()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The decoder stops after an error; anything else (a reset, TLS) ends the connection too.
        if let error = error as? NIOWebSocketError {
            deliver(.decodingFailed(error))
        } else if let failure = error as? MessageInflater.Failure {
            deliver(.inflationFailed(failure))
        } else {
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deliver(.closed)
        context.fireChannelInactive()
    }

    private func deliver(_ event: Event) {
        if let receiver { receiver(event) } else { held.append(event) }
    }

    private func issueRead() {
        guard readDemand, receiver != nil, !readInFlight, let context, context.channel.isActive else { return }
        readInFlight = true
        context.read()
    }
}
