import NIOCore
import NIOHTTP2

/// Makes an HTTP/2 stream's channel a byte stream for the handlers above it, as a TCP
/// connection is: DATA payloads in become `ByteBuffer`s, END_STREAM (on DATA or trailers)
/// becomes `ChannelEvent.inputClosed` (the client's half-close); `ByteBuffer`s out become DATA,
/// and `close(mode: .output)` becomes END_STREAM. An intercepted CONNECT stream runs the client's
/// TLS, and the HTTP/1.1 or HTTP/2 handlers inside it, above this (RFC 9113 §8.5).
///
/// Back-pressure is the stream channel's: reads asked from above pass through (the stream
/// channel opens the client's window for what it delivered), a write's future completes when the
/// client's window took the DATA, and writability follows the window.
final class HTTP2StreamBytes: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// END_STREAM went out.
    private(set) var outputClosed: Bool
    /// END_STREAM came in.
    private(set) var inputClosed = false

    /// - Parameter outputClosed: END_STREAM went out already.
    init(outputClosed: Bool = false) {
        self.outputClosed = outputClosed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let endStream: Bool
        switch unwrapInboundIn(data) {
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data, buffer.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(buffer))
            }
            endStream = data.endStream
        case .headers(let headers):
            // Trailers end the stream; their fields mean nothing to a byte stream.
            endStream = headers.endStream
        default:
            // RST_STREAM closes the channel (channelInactive follows); the rest is the connection's.
            endStream = false
        }
        if endStream, !inputClosed {
            inputClosed = true
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !outputClosed else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(unwrapOutboundIn(data))))), promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else {
            context.close(mode: mode, promise: promise)
            return
        }
        guard !outputClosed else {
            promise?.succeed()
            return
        }
        outputClosed = true
        context.writeAndFlush(
            wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))),
            promise: promise
        )
    }
}
