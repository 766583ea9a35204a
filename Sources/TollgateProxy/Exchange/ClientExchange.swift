import Foundation
import NIOCore
import TollgateHTTP
import TollgateLoop
import TollgateSession

/// What a client connection tells the exchange serving its current request. Called on the
/// connection's event loop.
protocol ClientExchange: AnyObject {
    /// Starts serving the request (the connection has made the exchange its current one).
    func start()
    /// A piece of the request body.
    func clientBodyReceived(_ buffer: ByteBuffer)
    /// The request (head and body) has arrived completely.
    func clientRequestEnded()
    /// The rest of the request was malformed or too slow: answer with `error` if nothing was
    /// sent yet; the connection closes after.
    func clientRequestFailed(_ error: ClientRequestError)
    /// The client closed the connection.
    func clientClosed()
    /// The client's socket stopped or started taking bytes.
    func clientWritabilityChanged(_ writable: Bool)
    /// The client took no bytes for `limits.client-send-timeout`: the connection
    /// closes next (``clientClosed()`` follows).
    func clientSendTimedOut()
}

extension ClientExchange {
    func clientSendTimedOut() {}
}
