/// The status line and header fields of an HTTP response, as received or as to be sent.
public struct HTTPResponseHead: Hashable, Sendable {
    /// The status code (100…599).
    public var status: Int
    /// The reason phrase (informational only).
    public var reason: String
    /// The protocol version, e.g. `HTTP/1.1`.
    public var version: String
    /// The header fields in received order.
    public var headerFields: HeaderFields

    /// Creates a response head; the reason defaults to the standard phrase of the status.
    public init(status: Int, reason: String? = nil, version: String = "HTTP/1.1", headerFields: HeaderFields = [:]) {
        self.status = status
        self.reason = reason ?? HTTPResponseHead.standardReason(for: status)
        self.version = version
        self.headerFields = headerFields
    }

    /// The body length the Content-Length field announces, or nil when it is absent or not a single valid number.
    public var contentLength: Int64? { headerFields.contentLength }

    /// Whether this status can carry no body whatever the headers say (1xx, 204, 304; RFC 9112 §6.3).
    public var statusForbidsBody: Bool { (100..<200).contains(status) || status == 204 || status == 304 }

    /// Whether this is a redirect a client may follow (301, 302, 303, 307, 308).
    public var isRedirect: Bool { [301, 302, 303, 307, 308].contains(status) }

    /// The standard reason phrase for a status (RFC 9110 §15), or an empty string.
    public static func standardReason(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 508: "Loop Detected"
        default: ""
        }
    }
}
