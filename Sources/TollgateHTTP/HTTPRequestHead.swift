/// The request line and header fields of an HTTP request, independent of how it is sent.
public struct HTTPRequestHead: Hashable, Sendable {
    /// The method.
    public var method: HTTPMethod
    /// The absolute target URL.
    public var url: HTTPURL
    /// The header fields in order (Host is derived from the URL when sent, unless present).
    public var headerFields: HeaderFields

    /// Creates a request head.
    public init(method: HTTPMethod = .get, url: HTTPURL, headerFields: HeaderFields = [:]) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
    }
}
