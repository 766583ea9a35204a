import NIOCore
import NIOWebSocket

/// permessage-deflate on a WebSocket task's connection (RFC 7692), between NIOWebSocket's frame
/// codec and the task's ``WebSocketFrameHandler``: the task's text and binary messages leave
/// compressed (RSV1 set), and the server's compressed messages (RSV1 on their first frame) arrive
/// decompressed frame by frame, RSV1 cleared — so ``WebSocketMachine`` sees plain frames and
/// bounds the messages' real size. A frame whose RSV1 means nothing here (a control frame's, a
/// continuation's) goes on as it came, for the machine to refuse.
///
/// A message that will not decompress, or would grow past the task's `maximumMessageSize`, is
/// reported as a ``MessageInflater/Failure`` (the task fails the connection with 1007 or 1009);
/// nothing after it is passed on. Touched only on the channel's event loop.
final class PerMessageDeflateHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let deflater: MessageDeflater
    private let inflater: MessageInflater
    private let maximumMessageSize: Int
    /// Inside a message from the server, and whether it is compressed.
    private var inMessage = false
    private var messageCompressed = false
    private var failed = false

    /// The handler for what `agreed`; nil when zlib cannot make its streams.
    init?(_ agreed: PerMessageDeflate, maximumMessageSize: Int) {
        guard let deflater = MessageDeflater(windowBits: agreed.clientWindowBits, resetsEachMessage: agreed.clientNoContextTakeover),
            let inflater = MessageInflater(resetsEachMessage: agreed.serverNoContextTakeover)
        else { return nil }
        self.deflater = deflater
        self.inflater = inflater
        self.maximumMessageSize = maximumMessageSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var frame = unwrapInboundIn(data)
        // A masked frame is the machine's to refuse (a server must not mask), not this one's to read.
        guard frame.maskKey == nil else {
            context.fireChannelRead(data)
            return
        }
        switch frame.opcode {
        case .text, .binary:
            messageCompressed = frame.rsv1
            inMessage = !frame.fin
        case .continuation where !frame.rsv1 && inMessage:
            inMessage = !frame.fin
        default:
            context.fireChannelRead(data)
            return
        }
        guard messageCompressed else {
            context.fireChannelRead(data)
            return
        }
        do {
            frame.data = try inflater.inflate(frame.data, ends: frame.fin, limit: maximumMessageSize, allocator: context.channel.allocator)
        } catch {
            failed = true
            context.fireErrorCaught(error)
            return
        }
        frame.rsv1 = false
        context.fireChannelRead(wrapInboundOut(frame))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var frame = unwrapOutboundIn(data)
        // The task sends each message as one frame; control frames are never compressed.
        guard frame.opcode == .text || frame.opcode == .binary, frame.fin else {
            context.write(data, promise: promise)
            return
        }
        frame.data = deflater.compress(frame.data, allocator: context.channel.allocator)
        frame.rsv1 = true
        context.write(wrapOutboundOut(frame), promise: promise)
    }
}
