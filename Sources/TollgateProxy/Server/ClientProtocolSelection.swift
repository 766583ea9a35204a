import NIOCore
import TollgateTLS

/// The one place where the protocol a TLS client speaks decides its pipeline: a TLS listener's
/// connections (``ClientProtocolSelectionHandler``) and intercepted CONNECTs both go through it.
///
/// ALPN `http/1.1`, or no ALPN at all, is HTTP/1.1: the ``ClientConnectionHandler`` above the
/// TLS handler. HTTP/2 plugs in here (issue #27, the HTTP/2 front): a case `http2`, chosen for
/// `h2` in ``init(negotiated:)``, offered first in ``offeredProtocols``, and one call in
/// ``configure(_:after:environment:clientTLS:)`` — each spot is marked `HTTP/2:` (and one in
/// `ClientConnectionHandler.userInboundEventTriggered`, for an intercepted CONNECT).
enum ClientProtocolSelection: Equatable {
    /// HTTP/1.1 inside TLS.
    case http1
    // HTTP/2: case http2

    /// The ALPN protocols a TLS listener and an intercepted CONNECT offer, most preferred first.
    // HTTP/2: ["h2", "http/1.1"]
    static let offeredProtocols = ["http/1.1"]

    /// The protocol for what ALPN negotiated (nil: the client offered none, or none of ours).
    init(negotiated: String?) {
        switch negotiated {
        // HTTP/2: case "h2": self = .http2
        default: self = .http1
        }
    }

    /// Adds the handlers that serve this protocol after `position` (the TLS handler's side of the
    /// pipeline), for a connection whose handshake negotiated TLS version `clientTLS`.
    func configure(
        _ pipeline: ChannelPipeline.SynchronousOperations,
        after position: any ChannelHandler,
        environment: ListenerEnvironment,
        clientTLS: String
    ) throws {
        switch self {
        case .http1:
            let handler = ClientConnectionHandler(environment: environment, clientTLS: clientTLS)
            try pipeline.addHandler(handler, position: .after(position))
        // HTTP/2: case .http2: try pipeline.configureHTTP2Front(environment: environment, clientTLS: clientTLS)
        }
    }
}
