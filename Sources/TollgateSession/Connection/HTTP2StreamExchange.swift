import NIOCore
import NIOHTTP2

/// One task's lease of an HTTP/2 connection: each exchange it starts is a new stream, run by an
/// ``HTTP2StreamHandler`` that reports to the same ``ExchangeSink`` the HTTP/1.1 handler does.
/// Touched on the connection's event loop only.
final class HTTP2StreamExchange: OriginExchangeHandler, @unchecked Sendable {
    let connection: HTTP2OriginConnection
    /// The running exchange's stream.
    private var stream: HTTP2StreamHandler?

    init(connection: HTTP2OriginConnection) {
        self.connection = connection
    }

    func startExchange(head: RequestHeadEncoder, body: BodySource, sink: any ExchangeSink) {
        guard let multiplexer = connection.multiplexer else {
            var error = SessionError(.networkConnectionLost, nil, "the HTTP/2 connection closed before the request: not sent")
            error.notProcessed = true
            sink.exchangeDidFail(error, responseStarted: false)
            return
        }
        let handler = HTTP2StreamHandler(head: head.head, body: body, sink: sink, connection: connection)
        stream = handler
        let promise = connection.eventLoop.makePromise(of: (any Channel).self)
        multiplexer.createStreamChannel(promise: promise) { channel in
            channel.setOption(.autoRead, value: false).flatMap {
                channel.pipeline.addHandler(handler)
            }
        }
        promise.futureResult.whenFailure { error in
            // No stream, no request sent: not processed.
            var lost = SessionError(.networkConnectionLost, nil, "cannot open an HTTP/2 stream: \(error): not sent")
            lost.notProcessed = true
            handler.streamFailed(lost)
        }
    }

    func setReadDemand(_ demand: Bool) {
        stream?.setReadDemand(demand)
    }

    /// Resets the stream (RST_STREAM CANCEL); the connection and its other streams go on.
    func close() {
        stream?.close()
    }

    func approvePeer() {
        connection.approvePeer()
    }

    func convertToStream(midResponse: Bool, first: ByteBuffer) throws -> StreamConnectionHandler {
        throw SessionError(.badServerResponse, nil, "an HTTP/2 stream cannot become a byte stream")
    }

    func convertToWebSocket(maxFrameSize: Int, compression: PerMessageDeflate?) throws -> WebSocketFrameHandler {
        throw SessionError(.badServerResponse, nil, "an HTTP/2 stream cannot become a WebSocket")
    }
}
