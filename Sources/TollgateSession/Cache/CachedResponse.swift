public import Foundation
public import TollgateHTTP

/// A response about to be stored, as `willCacheResponse` proposes it (`CachedURLResponse`).
///
/// The body is not in it: it was streamed to the cache's storage while it arrived (so a large
/// body is never held in memory); ``bodyLength`` says how long it is. A delegate may change the
/// header fields (e.g. to give the response a freshness lifetime) or refuse to store it.
public struct CachedResponse: Sendable {
    /// The request it answered.
    public var request: HTTPRequestHead
    /// The response head that will be stored.
    public var response: HTTPResponseHead
    /// The body's length in bytes.
    public var bodyLength: Int64
    /// When the request was sent (RFC 9111 `request_time`).
    public var requestTime: Date
    /// When the response head arrived (RFC 9111 `response_time`).
    public var responseTime: Date

    /// Creates a proposal.
    public init(request: HTTPRequestHead, response: HTTPResponseHead, bodyLength: Int64, requestTime: Date, responseTime: Date) {
        self.request = request
        self.response = response
        self.bodyLength = bodyLength
        self.requestTime = requestTime
        self.responseTime = responseTime
    }
}
