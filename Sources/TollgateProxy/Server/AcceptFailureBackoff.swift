import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listening channel's first handler: when `accept` fails for want of resources (no file
/// descriptor left in the process or the system, no buffer memory), it stops accepting for a
/// second and logs it, at most every ten seconds.
///
/// Without it the event loop spins a whole core while no client is served: the pending
/// connection keeps the listening socket readable, and NIO's server channel, whose read is still
/// pending after a failed `accept`, asks again at once (NIO's own `AcceptBackoffHandler` only
/// delays *new* reads, so it does not stop this). Turning `autoRead` off takes the socket out of
/// the poll set; turning it on again after the pause asks for the next accept. nginx does the
/// same (`accept` disabled for 500 ms).
final class AcceptFailureBackoff: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// How long accepting pauses after such a failure.
    static let pause: TimeAmount = .seconds(1)
    /// At most one log line every ten seconds (for all listeners of the process).
    private static let logged = LogInterval(.seconds(10))
    private static let logger = Logger(label: "tollgate.listener")

    private let label: String
    private var resumption: Scheduled<Void>?

    /// A handler for the listener named `label` in the log line.
    init(label: String) {
        self.label = label
    }

    /// Whether an accept failure is one that passes when resources are freed.
    static func isResourceShortage(_ error: any Error) -> Bool {
        guard let error = error as? IOError else { return false }
        return [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard Self.isResourceShortage(error), let io = error as? IOError else {
            context.fireErrorCaught(error)
            return
        }
        guard resumption == nil else { return }
        try? context.channel.syncOptions?.setOption(.autoRead, value: false)
        let channel = context.channel
        resumption = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: Self.pause) { [self] in
            resumption = nil
            try? channel.syncOptions?.setOption(.autoRead, value: true)
        }
        logShortage(io)
    }

    func channelInactive(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
        context.fireChannelInactive()
    }

    private func logShortage(_ error: IOError) {
        guard Self.logged.isDue() else { return }
        Self.logger.warning(
            "cannot accept connections: \(String(cString: strerror(error.errnoCode))); accepting pauses for a second (raise the open-file limit: LimitNOFILE= under systemd, ulimit -n)",
            metadata: ["listener": "\(label)", "open_file_limit": "\(OpenFileLimit.current)"]
        )
    }
}

extension ServerBootstrap {
    /// Pauses accepting when `accept` fails for want of resources (``AcceptFailureBackoff``),
    /// and serves at most `maximumConnections` at once when given (``AcceptGateHandler``; the
    /// times it reaches them counted in `metrics`).
    func backingOffAcceptFailures(label: String, maximumConnections: Int? = nil, metrics: ProxyMetrics? = nil) -> ServerBootstrap {
        serverChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(AcceptFailureBackoff(label: label))
                if let maximumConnections {
                    try channel.pipeline.syncOperations.addHandler(AcceptGateHandler(maximum: maximumConnections, label: label, metrics: metrics))
                }
            }
        }
    }
}
