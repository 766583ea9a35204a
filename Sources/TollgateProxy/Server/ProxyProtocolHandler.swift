import Logging
import NIOCore
import TollgatePolicy

/// The first handler of a connection to a listener with `proxy-protocol: true`: reads the load
/// balancer's PROXY protocol header (``ProxyProtocolHeader``), then installs the listener's own
/// handlers (a TLS handler goes first in the pipeline, the others after this one) and passes them
/// the bytes that followed the header. It stays, passing bytes through, as the holder of the
/// client's address (``clientAddress(of:)``).
///
/// A connection from a peer outside `access.trusted-forwarders` is closed at once (a header from
/// anyone else would let a client choose the address every access rule sees), as is one whose
/// first bytes are not a header, or that sends none within `limits.header-read-timeout`.
final class ProxyProtocolHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let logger = Logger(label: "tollgate.listener")

    private let environment: ListenerEnvironment
    private let install: (ChannelPipeline.SynchronousOperations) throws -> Void
    private var leading = LeadingBytes()
    private var timeout: Scheduled<Void>?
    private var done = false
    /// The client's address from the header; nil until it is read, or when the header carried
    /// none (the peer is the client then).
    private(set) var source: SocketAddress?

    /// A handler that runs `install` (adding the listener's handlers) once the header is read.
    init(environment: ListenerEnvironment, install: @escaping (ChannelPipeline.SynchronousOperations) throws -> Void) {
        self.environment = environment
        self.install = install
    }

    /// The client's address on `channel`: the PROXY header's source when the channel has one,
    /// else the peer's. To be called on the channel's event loop.
    static func clientAddress(of channel: any Channel) -> SocketAddress? {
        if let handler = try? channel.pipeline.syncOperations.handler(type: ProxyProtocolHandler.self), let source = handler.source {
            return source
        }
        return channel.remoteAddress
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let peer = context.channel.remoteAddress?.networkBytes
        guard let peer, environment.policy.access.trustsForwarding(address: peer) else {
            Self.logger.notice(
                "closed a connection whose peer is not in access.trusted-forwarders: a PROXY protocol header is believed only from those",
                metadata: ["peer": "\(context.channel.remoteAddress?.addressText ?? "-")"]
            )
            context.close(promise: nil)
            return
        }
        timeout = LeadingBytes.deadline(for: context, limits: environment.policy.limits)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeout?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            context.fireChannelRead(data)
            return
        }
        switch ProxyProtocolHeader.read(leading.append(unwrapInboundIn(data))) {
        case .incomplete:
            return
        case .invalid(let why):
            Self.logger.notice(
                "closed a connection: \(why)", metadata: ["peer": "\(context.channel.remoteAddress?.addressText ?? "-")"]
            )
            done = true
            timeout?.cancel()
            context.close(promise: nil)
        case .header(let source, let length):
            done = true
            timeout?.cancel()
            self.source = source
            let rest = leading.take(from: length)
            do {
                try install(context.pipeline.syncOperations)
            } catch {
                context.close(promise: nil)
                return
            }
            if let rest {
                // From the pipeline's head: a TLS handler goes first (`addTLSServerHandler`),
                // before this one, and the bytes after the header are its ciphertext.
                context.pipeline.fireChannelRead(wrapInboundOut(rest))
                context.pipeline.fireChannelReadComplete()
            }
        }
    }
}
