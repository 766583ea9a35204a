public import NIOCore
public import TollgateCache
public import TollgateHTTP

/// A request a task carries out, in the model of `URLRequest`: the head, an optional body,
/// and the per-request overrides of the session's settings.
public struct Request: Sendable {
    /// Method, URL and header fields.
    public var head: HTTPRequestHead
    /// The body, or nil for none.
    public var body: RequestBody?
    /// The cache policy; nil takes the session's.
    public var cachePolicy: RequestCachePolicy?
    /// The idle timeout; nil takes the session's `timeoutIntervalForRequest`.
    public var timeoutInterval: Duration?

    /// Creates a request.
    public init(
        method: HTTPMethod = .get,
        url: HTTPURL,
        headerFields: HeaderFields = [:],
        body: RequestBody? = nil,
        cachePolicy: RequestCachePolicy? = nil,
        timeoutInterval: Duration? = nil
    ) {
        self.head = HTTPRequestHead(method: method, url: url, headerFields: headerFields)
        self.body = body
        self.cachePolicy = cachePolicy
        self.timeoutInterval = timeoutInterval
    }

    /// Creates a GET request for a URL string; nil if the string is not an absolute http(s) URL.
    public init?(string: String) {
        guard let url = HTTPURL(string: string) else { return nil }
        self.init(url: url)
    }

    /// The method.
    public var method: HTTPMethod {
        get { head.method }
        _modify { yield &head.method }
    }

    /// The URL.
    public var url: HTTPURL {
        get { head.url }
        _modify { yield &head.url }
    }

    /// The header fields.
    public var headerFields: HeaderFields {
        get { head.headerFields }
        _modify { yield &head.headerFields }
    }
}

/// Where a request's body comes from.
public enum RequestBody: Sendable {
    /// Bytes in memory.
    case bytes(ByteBuffer)
    /// A file read in chunks as it is sent.
    case file(path: String)
    /// A stream supplied by the delegate's `needNewBodyStream` (again for each redirect or retry).
    case stream

    /// Bytes from a string's UTF-8.
    public static func string(_ text: String) -> RequestBody { .bytes(ByteBuffer(string: text)) }
}
