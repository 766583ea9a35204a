public import TollgateSession

/// The stable codes of the `Tollgate-Error` header on responses the proxy makes itself
/// (CONTRACT.md), with the status each is sent with.
public struct ProxyErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The code as sent in `Tollgate-Error`.
    public let rawValue: String
    /// The HTTP status of the response that carries it.
    public let status: Int

    private init(_ rawValue: String, _ status: Int) {
        self.rawValue = rawValue
        self.status = status
    }

    public static let upstreamUnreachable = ProxyErrorCode("upstream-unreachable", 502)
    public static let upstreamTimeout = ProxyErrorCode("upstream-timeout", 504)
    public static let upstreamProtocolError = ProxyErrorCode("upstream-protocol-error", 502)
    public static let upstreamConnectionLost = ProxyErrorCode("upstream-connection-lost", 502)
    public static let upstreamTLSUntrusted = ProxyErrorCode("upstream-tls-untrusted", 502)
    public static let pinMismatch = ProxyErrorCode("pin-mismatch", 502)
    public static let tooManyRedirects = ProxyErrorCode("too-many-redirects", 502)
    public static let hostDenied = ProxyErrorCode("host-denied", 403)
    public static let clientDenied = ProxyErrorCode("client-denied", 403)
    public static let connectPortDenied = ProxyErrorCode("connect-port-denied", 403)
    public static let badRequest = ProxyErrorCode("bad-request", 400)
    public static let notCached = ProxyErrorCode("not-cached", 504)
    public static let cancelled = ProxyErrorCode("cancelled", 502)
    public static let internalError = ProxyErrorCode("internal-error", 500)

    /// The code for a task that failed with `error`.
    public init(for error: SessionError) {
        switch error.code {
        case .cannotFindHost, .cannotConnectToHost, .notConnectedToInternet: self = .upstreamUnreachable
        case .timedOut: self = .upstreamTimeout
        case .badServerResponse: self = .upstreamProtocolError
        case .networkConnectionLost: self = .upstreamConnectionLost
        case .serverCertificateUntrusted, .secureConnectionFailed, .clientCertificateRequired: self = .upstreamTLSUntrusted
        case .pinMismatch: self = .pinMismatch
        case .httpTooManyRedirects: self = .tooManyRedirects
        case .resourceUnavailable: self = .notCached
        case .badURL, .unsupportedURL: self = .badRequest
        case .cancelled, .userCancelledAuthentication: self = .cancelled
        default: self = .internalError
        }
    }

    public var description: String { rawValue }
}
