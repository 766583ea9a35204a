public import NIOCore
public import TollgateCache
public import TollgateHTTP
public import TollgateTLS

/// The settings a ``Session`` is created with, in the model of `URLSessionConfiguration`.
///
/// A value type: the session keeps its own copy, so changing a configuration after the
/// session was created changes nothing for that session.
public struct SessionConfiguration: Sendable {
    /// Where the session's stores live.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case standard
            case ephemeral
            case background(String)
        }

        private let base: Base

        /// Persistent stores (cache, cookies, credentials on disk).
        public static let `default` = Kind(base: .standard)
        /// Every store in memory; nothing is written to disk.
        public static let ephemeral = Kind(base: .ephemeral)
        /// Like default, and its tasks are tracked under this identifier.
        public static func background(_ identifier: String) -> Kind { Kind(base: .background(identifier)) }

        /// Whether stores must stay in memory.
        public var isEphemeral: Bool { base == .ephemeral }

        /// The background identifier, if any.
        public var backgroundIdentifier: String? {
            if case .background(let identifier) = base { return identifier }
            return nil
        }

        public var description: String {
            switch base {
            case .standard: "default"
            case .ephemeral: "ephemeral"
            case .background(let identifier): "background(\(identifier))"
            }
        }
    }

    /// Default, ephemeral or background. Default: `.default`.
    public var kind: Kind
    /// The cache policy of requests that do not set their own. Default: `.protocol`.
    public var requestCachePolicy: RequestCachePolicy = .protocol
    /// The longest a running task may go without sending or receiving a byte. Default: 60 s.
    public var timeoutIntervalForRequest: Duration = .seconds(60)
    /// The longest a task may run in all (time spent suspended does not count). Default: 7 days.
    public var timeoutIntervalForResource: Duration = .seconds(7 * 24 * 3600)
    /// At most this many simultaneous connections to one origin (scheme, host, port). Default: 6.
    public var httpMaximumConnectionsPerHost: Int = 6
    /// Header fields added to every request that does not set them itself. Default: none.
    public var httpAdditionalHeaders: HeaderFields = [:]
    /// Whether requests carry cookies from ``cookieStorage``. Default: true.
    public var httpShouldSetCookies: Bool = true
    /// Which Set-Cookie fields are stored in ``cookieStorage``. Default: `.onlyFromMainDocumentDomain`.
    public var httpCookieAcceptPolicy: CookieAcceptPolicy = .onlyFromMainDocumentDomain
    /// The cookie store; nil means cookies are neither sent nor stored. Default: nil.
    public var cookieStorage: (any CookieStoring)?
    /// The credential store (URLCredentialStorage's role): default handling of Basic and Digest
    /// challenges answers from it, credentials that worked are kept in it as their persistence
    /// says, and Basic is sent preemptively to spaces that authenticated; nil means none of
    /// that. Default: nil.
    public var credentialStorage: CredentialStorage?
    /// The response cache (URLCache's role); nil means no caching. Default: nil.
    public var responseCache: ResponseCache?
    /// Rewrites a request's URL into the one its response is stored under (a rule's cache-key
    /// normalization: dropped or sorted query parameters). Default: nil, the URL itself.
    public var cacheKeyURL: (@Sendable (HTTPURL) -> HTTPURL)?
    /// Active health checks of ``connectionTargets`` (a Tollgate addition, HAProxy's `check`):
    /// each target with how often it is checked and what passes (``ConnectionTargetCheck``: a TCP
    /// connection accepted, or a TLS handshake the delegate accepts — ``HealthCheckTrustDeciding``
    /// — and an HTTP status). One that fails a check goes last until a check passes again — a request's
    /// connection made to it does not take it back —, and one that passes takes its turns at
    /// once. Read at every check, so a reload's rules apply. Default: nil, no checks (failures
    /// seen by requests alone decide).
    public var connectionTargetChecks: (@Sendable () -> [ConnectionTargetCheck])?
    /// How stale a stored response to a URL may be and still be served when its revalidation
    /// meets an error (the origin unreachable, or a 500, 502, 503 or 504), as if the response
    /// said `stale-if-error` with this many seconds; nil for a URL with no such window (a rule's
    /// `cache.stale-if-error`, as nginx's `proxy_cache_use_stale`; a Tollgate addition). It never
    /// overrides `must-revalidate`, `no-cache` or, in a shared cache, `proxy-revalidate`.
    /// Asked only when a stale response is revalidated. Default: nil, the response's own.
    public var staleIfErrorWindow: (@Sendable (HTTPURL) -> Duration?)?
    /// Whether a response to this URL is stored fresh for a set time whatever its headers say
    /// (a rule's `cache.force-ttl`, which `willCacheResponse` then applies): a `302`, `303` or
    /// `307` without freshness of its own is stored only then. Default: nil, never.
    public var forcesFreshness: (@Sendable (HTTPURL) -> Bool)?
    /// When a connection cannot be made, wait (and report it once to the delegate) instead of failing,
    /// retrying until the resource timeout. Default: false.
    public var waitsForConnectivity: Bool = false
    /// An HTTP proxy every request goes through. Default: none (direct).
    public var upstreamProxy: UpstreamProxy?
    /// Proxies a connection goes to, in order, when ``upstreamProxy`` cannot be connected to (a
    /// Tollgate addition; Squid's `FIRST_UP_PARENT`): the first that answers is used, and one that
    /// could not be connected to is tried last for ten seconds (``ConnectionTargetHealth``).
    /// Connections to any of them share the pool's keys; the credential and CONNECT fields go to
    /// each. Default: none.
    public var upstreamProxyFallbacks: [UpstreamProxy] = []
    /// The credential answering the upstream proxy's `407 Proxy Authentication Required` (Basic):
    /// sent as `Proxy-Authorization` with plain requests to the proxy and with the CONNECTs of
    /// https tasks and stream tasks, once the proxy asked for it (the request or CONNECT that got
    /// the 407 is sent once more with it). A secret: it is never logged and never appears in a
    /// task's request. Default: none (a 407 is the task's response, or fails its CONNECT).
    public var upstreamProxyCredential: Credential?
    /// Header fields sent with every `CONNECT` to ``upstreamProxy`` (CFNetwork's
    /// `kCFStreamPropertyCONNECTAdditionalHeaders`); a stream task may give its own instead
    /// (``StreamTask/connectHeaderFields``). The proxy sends its `CDN-Loop` member this way, so
    /// that a parent leading back to it can tell. Default: none.
    public var upstreamProxyConnectHeaderFields: HeaderFields = [:]
    /// The lowest TLS version accepted from https servers. Default: TLS 1.2.
    public var tlsMinimumSupportedProtocolVersion: TLSVersion = .tlsv1_2
    /// The TLS settings of https connections to a host (trust roots, client identity), given the
    /// session's defaults (system roots, full verification, the minimum version above). Default:
    /// nil, the defaults for every host. Each connection's trust is then decided by a server-trust
    /// challenge (the delegate may check pins, or accept an untrusted chain).
    public var tlsConfiguration: (@Sendable (_ host: String, _ port: Int, _ defaults: TLSConfiguration) -> TLSConfiguration)?
    /// Vets each address a host name resolved to before the pool connects to it (a proxy's
    /// destination rules): nil allows it; a reason refuses it and the next address is tried. When
    /// every address is refused the task fails with `cannotConnectToHost` giving the reason. Checking
    /// here, on the address actually connected to, closes the gap a check made before the task
    /// leaves: a name that resolves differently the second time (DNS rebinding). Not called for
    /// connections through ``upstreamProxy`` (the parent resolves the origin). Default: nil.
    public var connectionAddressCheck: (@Sendable (_ host: String, _ port: Int, _ address: SocketAddress) -> String?)?
    /// Where connections for a host are made instead of its own addresses (a Tollgate addition,
    /// as curl's `--connect-to`): nil or an empty list for a host connects to the host itself.
    /// The targets are tried in turn, each new connection starting at the next one; a target that
    /// cannot be connected to is tried last for ten seconds (``ConnectionTargetHealth``). The
    /// request's URL is unchanged: its host is what `Host`, the TLS server name, trust and the
    /// cache key go by. Each target's addresses pass ``connectionAddressCheck``. Not used for
    /// connections through ``upstreamProxy`` (the parent connects). Default: nil.
    public var connectionTargets: (@Sendable (_ host: String, _ port: Int) -> [ConnectionTarget])?
    /// How long an idle keep-alive connection stays in the pool. Default: 60 s.
    public var connectionIdleTimeout: Duration = .seconds(60)
    /// Redirects followed by one task before it fails with `httpTooManyRedirects` (whether or not a
    /// delegate approves each). Default: 16.
    public var maximumRedirects: Int = 16
    /// Whether a data task's `multipart/x-mixed-replace` response is delivered part by part (a
    /// `didReceive` response for each part, then its bytes), as URLSession does. A proxy, which
    /// relays the body as it is for its client to split, turns it off. Default: true.
    public var deliversMultipartReplaceParts: Bool = true
    /// Whether WebSocket tasks offer permessage-deflate (RFC 7692), as browsers do: messages then
    /// travel compressed both ways when the server agrees. Default: true.
    public var webSocketCompression: Bool = true
    /// The `User-Agent` sent when the request has none. Default: `tollgate`.
    public var userAgent: String? = "tollgate"
    /// Whether a redirect from the first URL to the second may be followed at all, asked before
    /// the delegate — and in a background session, whose delegate is never asked about redirects
    /// (they are followed, as the seeds say), the only say there is: false delivers the redirect
    /// as the task's response. A Tollgate addition, so that rules such as a denied host hold in
    /// background sessions too. Default: nil, every redirect may be followed.
    public var redirectFilter: (@Sendable (_ from: HTTPURL, _ to: HTTPURL) -> Bool)?
    /// Where background sessions keep their tasks: `DIRECTORY/IDENTIFIER/` (records in LMDB, partial
    /// downloads, copies of uploads). Default: nil, `$XDG_DATA_HOME/tollgate/background`, else
    /// `~/.local/share/tollgate/background`. Ignored by other kinds of session.
    public var backgroundDirectory: String?

    /// Creates a configuration of the given kind with every other field at its default.
    public init(kind: Kind) { self.kind = kind }

    /// Persistent stores.
    public static var `default`: SessionConfiguration { SessionConfiguration(kind: .default) }
    /// Nothing written to disk.
    public static var ephemeral: SessionConfiguration { SessionConfiguration(kind: .ephemeral) }
    /// A session whose tasks are tracked under `identifier`.
    public static func background(identifier: String) -> SessionConfiguration {
        SessionConfiguration(kind: .background(identifier))
    }
}

/// Which cookies a session stores, as `HTTPCookie.AcceptPolicy`.
public enum CookieAcceptPolicy: String, Hashable, Sendable {
    /// Store every cookie.
    case always
    /// Store none.
    case never
    /// Store only cookies whose domain matches the main document's (here: the request's host).
    case onlyFromMainDocumentDomain
}

/// An HTTP proxy the session sends its requests through (absolute-form requests for http URLs).
public struct UpstreamProxy: Hashable, Sendable {
    /// The proxy's host.
    public var host: String
    /// The proxy's port.
    public var port: Int

    /// Creates a proxy setting.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `http://host:port`.
    public init?(url: String) {
        guard let parsed = HTTPURL(string: url), parsed.scheme == "http" else { return nil }
        self.init(host: parsed.host, port: parsed.effectivePort)
    }
}
