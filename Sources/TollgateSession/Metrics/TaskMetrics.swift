public import Foundation
public import TollgateHTTP

/// Timings and counts of one request/response exchange, in the model of
/// `URLSessionTaskTransactionMetrics`. A task has one per request it sent (redirects and retries
/// add more) or one with `resourceFetchType == .localCache` when the cache answered.
public struct TransactionMetrics: Sendable {
    /// Where the response came from.
    public enum ResourceFetchType: String, Sendable {
        /// From the origin over the network.
        case networkLoad = "network-load"
        /// From the session's response cache.
        case localCache = "local-cache"
        /// Not known (the transaction failed before a source was chosen).
        case unknown
    }

    /// The request of this transaction.
    public var request: Request
    /// Its response head, if one arrived.
    public var response: HTTPResponseHead?
    /// When the task began fetching this resource.
    public var fetchStartDate: Date?
    /// Name lookup started/ended (nil on a reused connection).
    public var domainLookupStartDate: Date?
    /// Name lookup ended.
    public var domainLookupEndDate: Date?
    /// TCP connect started (nil on a reused connection).
    public var connectStartDate: Date?
    /// TLS handshake started (nil for plain HTTP).
    public var secureConnectionStartDate: Date?
    /// TLS handshake ended.
    public var secureConnectionEndDate: Date?
    /// Connection established.
    public var connectEndDate: Date?
    /// The first byte of the request was written.
    public var requestStartDate: Date?
    /// The last byte of the request was written.
    public var requestEndDate: Date?
    /// The first byte of the response arrived.
    public var responseStartDate: Date?
    /// The last byte of the response arrived.
    public var responseEndDate: Date?
    /// The TLS version of an https connection (`TLSv1.3`), nil otherwise.
    public var negotiatedTLSProtocolVersion: String?
    /// `http/1.1`, or nil for the local cache.
    public var networkProtocolName: String?
    /// Whether the connection had carried an earlier request.
    public var isReusedConnection = false
    /// Whether the request went through an upstream proxy.
    public var isProxyConnection = false
    /// The peer's address (`IP:port`).
    public var remoteAddress: String?
    /// Bytes of the request head written.
    public var countOfRequestHeaderBytesSent: Int64 = 0
    /// Bytes of the request body written.
    public var countOfRequestBodyBytesSent: Int64 = 0
    /// Bytes of the response head received (estimated from its fields).
    public var countOfResponseHeaderBytesReceived: Int64 = 0
    /// Bytes of the response body received.
    public var countOfResponseBodyBytesReceived: Int64 = 0
    /// Where the response came from.
    public var resourceFetchType: ResourceFetchType = .unknown

    /// Creates empty metrics for a request.
    public init(request: Request) { self.request = request }
}

/// A task's metrics, in the model of `URLSessionTaskMetrics`.
public struct TaskMetrics: Sendable {
    /// One entry per exchange, in order.
    public var transactionMetrics: [TransactionMetrics]
    /// From the first `resume()` to completion.
    public var taskInterval: DateInterval
    /// How many redirects were followed.
    public var redirectCount: Int
}

