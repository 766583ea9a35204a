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

    /// The ALPN protocols a reverse TLS listener and an intercepted CONNECT offer, most preferred
    /// first.
    static let offeredProtocols = ["h2", "http/1.1"]

    /// What a TLS listener in `mode` offers. A forward one (an HTTPS proxy) offers only
    /// `http/1.1`: its clients' main use is CONNECT, and a client that negotiated h2 with its
    /// proxy (a browser) would send CONNECT on a stream, which the HTTP/2 front answers 501
    /// (RFC 9113 §8.5 tunnels are not built); over HTTP/1.1 the same client tunnels.
    static func offeredProtocols(for mode: ListenerMode) -> [String] {
        if case .forward = mode { return ["http/1.1"] }
        return offeredProtocols
    }

    /// The protocol for what ALPN negotiated (nil: the client offered none, or none of ours).
    init(negotiated: String?) {
        switch negotiated {
        case "h2": self = .http2
        default: self = .http1
        }
    }

    /// Adds the handlers that serve this protocol at `position` (the TLS handler's side of the
    /// pipeline), for a connection whose handshake negotiated TLS version `clientTLS`.
    func configure(
        _ pipeline: ChannelPipeline.SynchronousOperations,
        at position: ChannelPipeline.SynchronousOperations.Position,
        environment: ListenerEnvironment,
        remoteAddress: SocketAddress?,
        clientTLS: String
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
