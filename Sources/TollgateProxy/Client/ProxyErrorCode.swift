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

    /// The upstream's name did not resolve or it refused the connection (502).
    public static let upstreamUnreachable = ProxyErrorCode("upstream-unreachable", 502)
    /// The upstream did not answer in time (504).
    public static let upstreamTimeout = ProxyErrorCode("upstream-timeout", 504)
    /// The upstream's answer was not valid HTTP/1.1, or not one the proxy can relay (502).
    public static let upstreamProtocolError = ProxyErrorCode("upstream-protocol-error", 502)
    /// The upstream connection closed before the response was complete (502).
    public static let upstreamConnectionLost = ProxyErrorCode("upstream-connection-lost", 502)
    /// The upstream's certificate was not trusted, or the TLS handshake failed (502).
    public static let upstreamTLSUntrusted = ProxyErrorCode("upstream-tls-untrusted", 502)
    /// The upstream's chain matched none of the configured pins (502).
    public static let pinMismatch = ProxyErrorCode("pin-mismatch", 502)
    /// A CONNECT to a host whose rule says `intercept: true` could not be intercepted: no usable
    /// local CA, or no certificate could be minted for the host (502).
    public static let interceptionFailed = ProxyErrorCode("interception-failed", 502)
    /// More redirects than allowed (502).
    public static let tooManyRedirects = ProxyErrorCode("too-many-redirects", 502)
    /// A rule refuses this destination (403).
    public static let hostDenied = ProxyErrorCode("host-denied", 403)
    /// The client's address is not allowed (403).
    public static let clientDenied = ProxyErrorCode("client-denied", 403)
    /// The client made more requests than `access.rate-limit` allows (429, with `Retry-After`).
    public static let rateLimited = ProxyErrorCode("rate-limited", 429)
    /// The client has more connections open than `access.connection-limit` allows (429; the
    /// HTTP/1.1 connection closes after it).
    public static let tooManyConnections = ProxyErrorCode("too-many-connections", 429)
    /// CONNECT to a port that is not allowed (403).
    public static let connectPortDenied = ProxyErrorCode("connect-port-denied", 403)
    /// The request head is larger than `limits.max-header-bytes` or has more than
    /// `limits.max-headers` fields (431).
    public static let headerTooLarge = ProxyErrorCode("header-too-large", 431)
    /// The client was slower sending its request than `limits.header-read-timeout` allows (408).
    public static let requestTimeout = ProxyErrorCode("request-timeout", 408)
    /// Proxy authentication is required and none, or a wrong one, was given (407).
    public static let proxyAuthenticationRequired = ProxyErrorCode("proxy-auth-required", 407)
    /// The client's request cannot be served as sent (400; 501 for what this build does not support yet).
    public static let badRequest = ProxyErrorCode("bad-request", 400)
    /// Offline: the cache policy forbids the network and nothing usable is stored (504).
    public static let notCached = ProxyErrorCode("not-cached", 504)
    /// Offline (`serve --offline`, `offline: true`): nothing usable is stored, the manifest does
    /// not list the request, or it needs the network (a tunnel, an upgrade) (504).
    public static let offlineMiss = ProxyErrorCode("offline-miss", 504)
    /// Offline with a manifest: what is stored is not what the manifest locks (status, size or
    /// SHA-256) (502). A body found to differ while it is sent is cut short instead.
    public static let manifestMismatch = ProxyErrorCode("manifest-mismatch", 502)
    /// The request came back to this proxy: it carries the proxy's own `CDN-Loop` member (508,
    /// Loop Detected, as CDNs answer a loop).
    public static let forwardingLoop = ProxyErrorCode("forwarding-loop", 508)
    /// A `map-local` path whose file is not there (404).
    public static let mapLocalMissing = ProxyErrorCode("map-local-missing", 404)
    /// A `PURGE` from a client not in `access.purge-clients` (403), or to a cache that cannot
    /// be purged: read-only (409) or none (404).
    public static let purgeRefused = ProxyErrorCode("purge-refused", 403)
    /// The task was cancelled (502).
    public static let cancelled = ProxyErrorCode("cancelled", 502)
    /// Something that should not happen (500).
    public static let internalError = ProxyErrorCode("internal-error", 500)
    /// Never sent: the access log's error for a response cut off because the client took none
    /// of it for `limits.client-send-timeout` (the connection is closed; 408 would be its status).
    public static let clientSendTimeout = ProxyErrorCode("client-send-timeout", 408)

    /// The code for a task that failed with `error`.
    public init(for error: SessionError) {
        // A parent that found the CONNECT had passed it before: the loop goes on being one.
        if error.upstreamProxyDetectedLoop {
            self = .forwardingLoop
            return
        }
        switch error.code {
        case .cannotFindHost, .cannotConnectToHost, .notConnectedToInternet: self = .upstreamUnreachable
        case .timedOut: self = .upstreamTimeout
        case .badServerResponse: self = .upstreamProtocolError
        case .networkConnectionLost: self = .upstreamConnectionLost
        case .serverCertificateUntrusted, .secureConnectionFailed, .clientCertificateRequired:
            self = .upstreamTLSUntrusted
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
