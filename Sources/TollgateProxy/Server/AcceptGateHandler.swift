import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A listening channel's handler for `listen[].max-connections`: runs ``AcceptGate`` on the
/// connections the listener accepts — passes on those it serves, holds those past the limit, and
/// turns accepting off and on (`autoRead` of the listening socket: off, the socket leaves the
/// poll set and the kernel queues new connections).
final class AcceptGateHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// At most one log line every ten seconds (for all listeners of the process).
    private static let logged = LogInterval(.seconds(10))
    private static let logger = Logger(label: "tollgate.listener")

    private var gate: AcceptGate<any Channel>
    private let label: String
    private let metrics: ProxyMetrics?
    private var context: ChannelHandlerContext?

    /// A handler serving at most `maximum` connections at once, for the listener named `label`
    /// in the log line and `metrics`' count of the times it reached them.
    init(maximum: Int, label: String, metrics: ProxyMetrics? = nil) {
        gate = AcceptGate(maximum: maximum)
        self.label = label
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let wasPaused = gate.paused
        run(gate.accepted(unwrapInboundIn(data)))
        if !wasPaused, gate.paused {
            // Counted and said when the limit is reached, not at each connection that meets it.
            metrics?.listenerReachedMaximumConnections(label)
            logLimitReached()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        run(gate.listenerClosed())
        context.fireChannelInactive()
    }

    private func run(_ actions: [AcceptGate<any Channel>.Action]) {
        guard let context else { return }
        for action in actions {
            switch action {
            case .serve(let child):
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                child.closeFuture.whenComplete { _ in
                    handler.eventLoop.execute { handler.value.run(handler.value.gate.closed()) }
                }
                context.fireChannelRead(wrapInboundOut(child))
            case .pause:
                try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            case .resume:
                try? context.channel.syncOptions?.setOption(.autoRead, value: true)
            case .drop(let children):
                for child in children { child.close(promise: nil) }
            }
        }
    }

    private func logLimitReached() {
        guard Self.logged.isDue() else { return }
        Self.logger.notice(
            "the listener has max-connections (\(gate.maximum)) open: new connections wait in the listen queue until one closes",
            metadata: ["listener": "\(label)"]
        )
    }
}
