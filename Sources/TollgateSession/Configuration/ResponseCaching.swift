public import NIOCore
public import TollgateCache
public import TollgateHTTP

/// A response as stored in a cache, with its body, in the model of `CachedURLResponse`.
public struct CachedResponse: Sendable {
    /// The request it answered.
    public var request: HTTPRequestHead
    /// The response head as received.
    public var response: HTTPResponseHead
    /// The whole body.
    public var body: ByteBuffer
    /// When the request was sent (RFC 9111 `request_time`).
    public var requestTime: ContinuousClock.Instant?
    /// When the response arrived (RFC 9111 `response_time`).
    public var responseTime: ContinuousClock.Instant?
    /// Free-form data the delegate may attach (URLCache's `userInfo`).
    public var userInfo: [String: String]

    /// Creates a cached response.
    public init(
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        body: ByteBuffer,
        requestTime: ContinuousClock.Instant? = nil,
        responseTime: ContinuousClock.Instant? = nil,
        userInfo: [String: String] = [:]
    ) {
        self.request = request
        self.response = response
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.userInfo = userInfo
    }
}

/// The store a session keeps responses in (URLCache's role).
///
/// The session consults it before going to the network, as the request's cache policy says,
/// and offers each complete network response to `willCacheResponse` before storing it.
public protocol ResponseCaching: AnyObject, Sendable {
    /// A stored response usable for `request` under `policy`, or nil.
    func cachedResponse(for request: HTTPRequestHead, policy: RequestCachePolicy) -> CachedResponse?
    /// Whether this response may be proposed for storing at all (status, Cache-Control, size);
    /// `bodyLength` is nil when the response did not announce it.
    func mayStore(_ response: HTTPResponseHead, for request: HTTPRequestHead, bodyLength: Int?) -> Bool
    /// The largest body the cache takes (the seeds' 5 % of capacity); a body that grows past it
    /// while it arrives is not kept.
    var maximumEntrySize: Int { get }
    /// Stores a response (after the delegate agreed).
    func store(_ cached: CachedResponse)
    /// Removes everything stored (`Session.reset()`).
    func removeAll()
}
