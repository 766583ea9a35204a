import NIOCore
import TollgateHTTP
import TollgateTLS

/// What only an HTTP/1.1 client connection offers an exchange: giving itself over to a relay
/// (CONNECT, an upgrade) or to interception. An exchange reaches it by casting its
/// ``ClientResponder``; a responder that is not one (an HTTP/2 stream) cannot tunnel this way.
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
