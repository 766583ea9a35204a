import NIOCore
import TollgateHTTP

/// What an exchange answers its request through, and how it paces the client's request body:
/// the narrow face of a client connection. An HTTP/1.1 connection (``ClientConnectionHandler``)
/// is one; an HTTP/2 stream can be another, so the exchanges never see the connection itself.
///
/// Called on the connection's event loop only.
protocol ClientResponder: AnyObject {
    /// Whether the client is still there to be answered.
    var isActive: Bool { get }
    /// Whether the client's socket takes more bytes now.
    var isWritable: Bool { get }
    /// Whether the current response's body may go out as a file region (`sendfile`).
    var acceptsFileRegion: Bool { get }

    /// Writes an interim response (100 Continue, 103; 101 before a relay).
    func sendInterim(_ head: HTTPResponseHead)
    /// An empty list for the fields the proxy adds to a response, in storage kept from the last
    /// response (``sendHead(_:adding:omitting:framing:bodyLength:close:)`` keeps it again).
    func takeAddedFields() -> HeaderFields
    /// Writes a response head; the body follows with ``sendBody(_:)`` or ``sendFile(_:)`` and ends
    /// with ``sendEnd()``. `bodyLength` is a `.contentLength` body's length; `close` asks for the
    /// connection to close after this response.
    func sendHead(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        omitting omission: HopByHopHeaders.Omission?,
        framing: ResponseFraming,
        bodyLength: Int64?,
        close: Bool
    )
    /// Writes a piece of the response body.
    func sendBody(_ piece: ByteBuffer)
    /// Writes a body piece that is a region of a file; the future completes when it was taken
    /// (nil: the client is gone). Only when ``acceptsFileRegion``.
    func sendFile(_ region: FileRegion) -> EventLoopFuture<Void>?
    /// Ends the response.
    func sendEnd()
    /// Writes a whole response of the proxy's own and ends the exchange's part.
    func sendOwnAnswer(_ answer: OwnResponse, close: Bool)
    /// Cuts the response short: the client must not take it for a complete one.
    func abort()

    /// Holds reads from the client until the session has taken this request body piece.
    func trackBodyPiece(_ taken: EventLoopFuture<Void>)
    /// Stops reading the request until ``releaseReads()``.
    func holdReads()
    /// Undoes one ``holdReads()``.
    func releaseReads()
}

extension ClientResponder {
    /// ``sendHead(_:adding:omitting:framing:bodyLength:close:)`` with nothing omitted.
    func sendHead(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        framing: ResponseFraming,
        bodyLength: Int64?,
        close: Bool
    ) {
        sendHead(head, adding: &added, omitting: nil, framing: framing, bodyLength: bodyLength, close: close)
    }
}
