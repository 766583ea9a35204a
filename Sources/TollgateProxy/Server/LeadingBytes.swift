import NIOCore
import TollgatePolicy

/// The first bytes of a connection, gathered until a handler can tell what they are (the
/// HTTP/2 preface, a PROXY protocol header), and the time the client has to send them: as long as
/// it has to send a request head (`limits.header-read-timeout`), after which it is cut off.
struct LeadingBytes {
    /// Everything received so far.
    private(set) var received: ByteBuffer?

    /// Adds `bytes`; everything received so far.
    mutating func append(_ bytes: ByteBuffer) -> ByteBuffer {
        var bytes = bytes
        if received == nil {
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        return received!
    }

    /// Everything received, from `offset` on, for the handlers that follow; nothing is kept.
    mutating func take(from offset: Int = 0) -> ByteBuffer? {
        defer { received = nil }
        guard var rest = received else { return nil }
        rest.moveReaderIndex(forwardBy: min(offset, rest.readableBytes))
        return rest.readableBytes > 0 ? rest : nil
    }

    /// Closes the channel of `context` unless cancelled within the listener's header-read timeout.
    static func deadline(for context: ChannelHandlerContext, limits: PolicyConfiguration.Limits) -> Scheduled<Void> {
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        return context.eventLoop.scheduleTask(in: TimeAmount(limits.headerReadTimeout)) { loopBoundContext.value.close(promise: nil) }
    }
}
