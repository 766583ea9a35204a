import NIOCore

/// What a task drives on a leased connection: the HTTP/1.1 connection handler
/// (``OriginConnectionHandler``), or one stream of an HTTP/2 connection (``HTTP2StreamExchange``).
/// Called on the connection's event loop.
protocol OriginExchangeHandler: AnyObject, Sendable {
    /// Starts an exchange: sends the request and reports to `sink`.
    func startExchange(head: RequestHeadEncoder, body: BodySource, sink: any ExchangeSink)
    /// Turns reading the response on or off (back-pressure).
    func setReadDemand(_ demand: Bool)
    /// Ends the exchange's transport: the HTTP/1.1 connection, or the HTTP/2 stream.
    func close()
    /// Lets application data flow after the session accepted the server's trust.
    func approvePeer()
    /// Hands the connection over as a byte stream (HTTP/1.1 only).
    func convertToStream(midResponse: Bool, first: ByteBuffer) throws -> StreamConnectionHandler
    /// Hands the connection over to a WebSocket (HTTP/1.1 only).
    func convertToWebSocket(maxFrameSize: Int, compression: PerMessageDeflate?) throws -> WebSocketFrameHandler
}

extension OriginConnectionHandler: OriginExchangeHandler {}
