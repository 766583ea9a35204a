import NIOCore
import TollgatePolicy

/// The first handler of a connection to a listener with `h2c: true`: reads until the first bytes
/// say what the client speaks (``HTTP2Preface``), then puts that protocol's handlers in its place
/// and passes them the bytes read — the HTTP/2 preface: ``NIOCore/ChannelPipeline/SynchronousOperations/configureHTTP2Front(environment:remoteAddress:)``;
/// anything else: the HTTP/1.1 ``ClientConnectionHandler``, unchanged. (No `Upgrade: h2c`:
/// RFC 9113 dropped it.)
///
/// A client that sends too little to decide within `limits.header-read-timeout` is cut off, as
/// one that sends half a request head is.
final class HTTP2PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let environment: ListenerEnvironment
    private var leading = LeadingBytes()
    private var timeout: Scheduled<Void>?
    private var decided = false

    init(environment: ListenerEnvironment) {
        self.environment = environment
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timeout = LeadingBytes.deadline(for: context, limits: environment.policy.limits)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeout?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        switch HTTP2Preface.classify(leading.append(unwrapInboundIn(data))) {
        case .undecided:
            return
        case .http2:
            become(context: context) { operations in
                try operations.configureHTTP2Front(
                    environment: environment,
                    remoteAddress: environment.clientAddress(of: context.channel)
                )
            }
        case .other:
            let environment = self.environment
            become(context: context) { operations in
                try operations.addHandler(ClientConnectionHandler(environment: environment))
            }
        }
    }

    /// Adds the protocol's handlers after this one, passes them what was read, and leaves.
    private func become(
        context: ChannelHandlerContext,
        _ install: (ChannelPipeline.SynchronousOperations) throws -> Void
    ) {
        decided = true
        timeout?.cancel()
        do {
            try install(context.pipeline.syncOperations)
        } catch {
            context.close(promise: nil)
            return
        }
        if let received = leading.take() {
            context.fireChannelRead(wrapInboundOut(received))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
