import NIOCore

/// Runs an ``InboundThrottle`` on a connection to a throttled listener: the first handler of the
/// pipeline (before TLS: what it delays are the bytes on the wire). Writes pass through; the
/// kernel paces them (`SO_MAX_PACING_RATE`, set by ``ProxyServer``).
final class InboundThrottleHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var machine: InboundThrottle
    private var timer: Scheduled<Void>?

    init(rate: Int64?, latency: TimeAmount) {
        machine = InboundThrottle(rate: rate, latency: latency)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        perform(machine.received(unwrapInboundIn(data), at: context.eventLoop.now), context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Fired after the bytes are passed on, not as they arrive.
    }

    func read(context: ChannelHandlerContext) {
        perform(machine.readRequested(at: context.eventLoop.now), context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        perform(machine.ended(.inputClosed, at: context.eventLoop.now), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        perform(machine.ended(.inactive, at: context.eventLoop.now), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func perform(_ actions: InboundThrottle.Actions, context: ChannelHandlerContext) {
        for bytes in actions.deliver { context.fireChannelRead(wrapInboundOut(bytes)) }
        if !actions.deliver.isEmpty { context.fireChannelReadComplete() }
        for end in actions.ends {
            switch end {
            case .inputClosed: context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            case .inactive: context.fireChannelInactive()
            }
        }
        if actions.read { context.read() }
        if let deadline = actions.wakeUp {
            timer?.cancel()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(deadline: deadline) {
                let (handler, context) = loopBound.value
                handler.timer = nil
                handler.perform(handler.machine.wokeUp(at: context.eventLoop.now), context: context)
            }
        }
    }
}
