import NIOCore
import TollgateTLS

/// The one place where the protocol a TLS client speaks decides its pipeline: a TLS listener's
/// connections (``ClientProtocolSelectionHandler``) and intercepted CONNECTs
/// (`ClientConnectionHandler.userInboundEventTriggered`) both go through it.
///
/// ALPN `h2` is HTTP/2: the front of ``NIOCore/ChannelPipeline/SynchronousOperations/configureHTTP2Front(environment:remoteAddress:clientTLS:position:)``
/// above the TLS handler. `http/1.1`, or no ALPN at all, is HTTP/1.1: the
/// ``ClientConnectionHandler`` above the TLS handler.
enum ClientProtocolSelection: Equatable {
    /// HTTP/1.1 inside TLS.
    case http1
    /// HTTP/2 inside TLS (RFC 9113 §3.2: ALPN `h2`).
    case http2

    /// The ALPN protocols every TLS listener and an intercepted CONNECT offer, most preferred
    /// first.
    static let offeredProtocols = ["h2", "http/1.1"]

    /// What a TLS listener in `mode` offers: h2 and http/1.1 whatever the mode. A forward one (an
    /// HTTPS proxy) serves CONNECT on HTTP/2 streams (RFC 9113 §8.5, ``TunnelExchange`` through
    /// ``HTTP2StreamHandler``) as over HTTP/1.1, intercepted or tunnelled.
    static func offeredProtocols(for mode: ListenerMode) -> [String] {
        offeredProtocols
    }

    /// The protocol for what ALPN negotiated (nil: the client offered none, or none of ours).
    init(negotiated: String?) {
        switch negotiated {
        case "h2": self = .http2
        default: self = .http1
        }
    }

    /// Adds the handlers that serve this protocol at `position` (the TLS handler's side of the
    /// pipeline), for a connection whose handshake settled `clientTLS`.
    func configure(
        _ pipeline: ChannelPipeline.SynchronousOperations,
        at position: ChannelPipeline.SynchronousOperations.Position,
        environment: ListenerEnvironment,
        remoteAddress: SocketAddress?,
        clientTLS: ClientTLS
    ) throws {
        switch self {
        case .http1:
            let handler = ClientConnectionHandler(environment: environment, clientTLS: clientTLS)
            try pipeline.addHandler(handler, position: position)
        case .http2:
            try pipeline.configureHTTP2Front(
                environment: environment,
                remoteAddress: remoteAddress,
                clientTLS: clientTLS,
                position: position
            )
        }
    }
}
