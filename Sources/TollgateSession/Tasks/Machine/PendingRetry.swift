import NIOCore
import TollgateHTTP

/// A redirect, 401 or 407 response the task holds instead of delivering: the data of the
/// ``TaskMachine`` stage that waits for the delegate's answer (follow, or deliver it after all)
/// and for the response's end. Both must be in before a retry is sent.
struct PendingRetry {
    enum Kind: Equatable {
        /// A 3xx with a Location: counted against `maximumRedirects` when followed.
        case redirect
        /// A 401 answered with a credential.
        case authentication
        /// The upstream proxy's 407, sent again with `Proxy-Authorization`.
        case proxyAuthentication
    }

    let kind: Kind
    let head: HTTPResponseHead
    /// The request the delegate is offered (a redirect's target; the same request for a 401 or 407).
    let newRequest: Request
    /// Identifies this hold: an answer carrying another id is late.
    let id: Int
    /// The body, kept while the response may still be delivered (dropped once a retry is decided).
    var body: [ByteBuffer] = []
    var bodyBytes = 0
    /// The response has ended.
    var ended = false
    /// The request to send once the response has ended (the answer, or the credential's retry).
    var follow: Request?
}
