import NIOCore
import TollgateHTTP
import TollgateTLS

/// What a client connection or stream offers a ``TunnelExchange``: giving itself over to a relay
/// (CONNECT, an upgrade) or to interception. The HTTP/1.1 connection is one
/// (``ClientConnectionHandler+Tunnels``), and so is an HTTP/2 stream for a CONNECT on it
/// (``HTTP2StreamHandler+Tunnel``, RFC 9113 §8.5). An upgrade's exchange reaches it by casting its
/// ``ClientResponder``.
protocol ClientTunnelHost: ClientResponder, RelayClientSide {
    /// Hands the connection to `relay`: from now on the client's bytes go to it raw.
    func startRelay(_ relay: StreamRelay)
    /// Answers the current CONNECT with 200 and continues as an intercepted connection to `origin`.
    func beginInterception(of origin: HTTPURL, context tlsContext: TLSContext)
}

/// The client side of a ``StreamRelay``: raw bytes out, EOF, close, and reading again.
protocol RelayClientSide: AnyObject {
    /// Writes relayed bytes; the future completes when the kernel took them (nil: gone).
    func writeRaw(_ bytes: ByteBuffer) -> EventLoopFuture<Void>?
    /// Sends EOF to the client.
    func closeOutput()
    /// Closes the client connection.
    func close()
    /// Reads from the client again if reading was waiting for the relay.
    func resumeReadingIfPossible()
}
