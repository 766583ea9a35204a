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

    /// The values, in one copy-on-write box: a transaction's metrics are copied into the task's
    /// list, the delegate's ``TaskMetrics`` and the proxy's exchange record, and each copy of the
    /// fields one by one retained the request, the response head and every string (a dozen
    /// retains per copy on a cache hit, issue #29).
    private struct Fields: Sendable {
        var request: Request
        var response: HTTPResponseHead?
        var fetchStartDate: Date?
        var domainLookupStartDate: Date?
        var domainLookupEndDate: Date?
        var connectStartDate: Date?
        var secureConnectionStartDate: Date?
        var secureConnectionEndDate: Date?
        var connectEndDate: Date?
        var requestStartDate: Date?
        var requestEndDate: Date?
        var responseStartDate: Date?
        var responseEndDate: Date?
        var negotiatedTLSProtocolVersion: String?
        var networkProtocolName: String?
        var isReusedConnection: Bool = false
        var isProxyConnection: Bool = false
        var remoteAddress: String?
        var countOfRequestHeaderBytesSent: Int64 = 0
        var countOfRequestBodyBytesSent: Int64 = 0
        var countOfResponseHeaderBytesReceived: Int64 = 0
        var countOfResponseBodyBytesReceived: Int64 = 0
        var resourceFetchType: ResourceFetchType = .unknown
    }

    @CopyOnWrite private var fields: Fields

    /// The request of this transaction.
    public var request: Request {
        _read { yield fields.request }
        _modify { yield &fields.request }
    }
    /// Its response head, if one arrived.
    public var response: HTTPResponseHead? {
        _read { yield fields.response }
        _modify { yield &fields.response }
    }
    /// When the task began fetching this resource.
    public var fetchStartDate: Date? {
        _read { yield fields.fetchStartDate }
        _modify { yield &fields.fetchStartDate }
    }
    /// Name lookup started/ended (nil on a reused connection).
    public var domainLookupStartDate: Date? {
        _read { yield fields.domainLookupStartDate }
        _modify { yield &fields.domainLookupStartDate }
    }
    /// Name lookup ended.
    public var domainLookupEndDate: Date? {
        _read { yield fields.domainLookupEndDate }
        _modify { yield &fields.domainLookupEndDate }
    }
    /// TCP connect started (nil on a reused connection).
    public var connectStartDate: Date? {
        _read { yield fields.connectStartDate }
        _modify { yield &fields.connectStartDate }
    }
    /// TLS handshake started (nil for plain HTTP).
    public var secureConnectionStartDate: Date? {
        _read { yield fields.secureConnectionStartDate }
        _modify { yield &fields.secureConnectionStartDate }
    }
    /// TLS handshake ended.
    public var secureConnectionEndDate: Date? {
        _read { yield fields.secureConnectionEndDate }
        _modify { yield &fields.secureConnectionEndDate }
    }
    /// Connection established.
    public var connectEndDate: Date? {
        _read { yield fields.connectEndDate }
        _modify { yield &fields.connectEndDate }
    }
    /// The first byte of the request was written.
    public var requestStartDate: Date? {
        _read { yield fields.requestStartDate }
        _modify { yield &fields.requestStartDate }
    }
    /// The last byte of the request was written.
    public var requestEndDate: Date? {
        _read { yield fields.requestEndDate }
        _modify { yield &fields.requestEndDate }
    }
    /// The first byte of the response arrived.
    public var responseStartDate: Date? {
        _read { yield fields.responseStartDate }
        _modify { yield &fields.responseStartDate }
    }
    /// The last byte of the response arrived.
    public var responseEndDate: Date? {
        _read { yield fields.responseEndDate }
        _modify { yield &fields.responseEndDate }
    }
    /// The TLS version of an https connection (`TLSv1.3`), nil otherwise.
    public var negotiatedTLSProtocolVersion: String? {
        _read { yield fields.negotiatedTLSProtocolVersion }
        _modify { yield &fields.negotiatedTLSProtocolVersion }
    }
    /// `http/1.1`, or nil for the local cache.
    public var networkProtocolName: String? {
        _read { yield fields.networkProtocolName }
        _modify { yield &fields.networkProtocolName }
    }
    /// Whether the connection had carried an earlier request.
    public var isReusedConnection: Bool {
        _read { yield fields.isReusedConnection }
        _modify { yield &fields.isReusedConnection }
    }
    /// Whether the request went through an upstream proxy.
    public var isProxyConnection: Bool {
        _read { yield fields.isProxyConnection }
        _modify { yield &fields.isProxyConnection }
    }
    /// The peer's address (`IP:port`).
    public var remoteAddress: String? {
        _read { yield fields.remoteAddress }
        _modify { yield &fields.remoteAddress }
    }
    /// Bytes of the request head written.
    public var countOfRequestHeaderBytesSent: Int64 {
        _read { yield fields.countOfRequestHeaderBytesSent }
        _modify { yield &fields.countOfRequestHeaderBytesSent }
    }
    /// Bytes of the request body written.
    public var countOfRequestBodyBytesSent: Int64 {
        _read { yield fields.countOfRequestBodyBytesSent }
        _modify { yield &fields.countOfRequestBodyBytesSent }
    }
    /// Bytes of the response head received (estimated from its fields).
    public var countOfResponseHeaderBytesReceived: Int64 {
        _read { yield fields.countOfResponseHeaderBytesReceived }
        _modify { yield &fields.countOfResponseHeaderBytesReceived }
    }
    /// Bytes of the response body received.
    public var countOfResponseBodyBytesReceived: Int64 {
        _read { yield fields.countOfResponseBodyBytesReceived }
        _modify { yield &fields.countOfResponseBodyBytesReceived }
    }
    /// Where the response came from.
    public var resourceFetchType: ResourceFetchType {
        _read { yield fields.resourceFetchType }
        _modify { yield &fields.resourceFetchType }
    }

    /// Creates empty metrics for a request.
    public init(request: Request) { _fields = CopyOnWrite(wrappedValue: Fields(request: request)) }
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

