import TollgateHTTP
public import TollgateSession
public import TollgatePolicy

extension ProxyServer {
    /// What a ``ProxyServer`` listens on and how it works.
    public struct Configuration: Sendable {
        /// Where to listen. Default: 127.0.0.1:3128 (the embedded default's forward listener).
        public var listen: ListenAddress
        /// What the listener does with requests. Default: forward.
        public var mode: ListenerMode
        /// Where the access log goes. Default: standard error, combined format.
        public var accessLog: AccessLog
        /// The counters `/metrics` reports (share one among the listeners of a process). Default: new.
        public var metrics: ProxyMetrics
        /// Mints the certificates of intercepted CONNECTs (share one among the listeners of a
        /// process). Nil: no interception, every CONNECT is tunnelled. Default: nil.
        public var interceptor: Interceptor?
        /// Offline mode (share one among the listeners of a process): `--offline`, the manifest
        /// and the miss report; without `forced`, the policy's `offline` decides. Default: not
        /// forced, no manifest.
        public var offline: OfflineMode
        /// HTTPS on this listener: its certificates (chosen by SNI) and lowest TLS version. After
        /// a reload of a ``PolicyRuntime`` the listener's entry (found by ``listen`` as
        /// configured) gives the certificates of new connections. Nil: plain HTTP. Default: nil.
        public var tls: PolicyConfiguration.Listener.TLS?
        /// HTTP/2 with prior knowledge besides HTTP/1.1 (`listen[].h2c`): the connection's first
        /// bytes decide (``HTTP2PrefaceSniffer``). Default: false.
        public var h2c: Bool
        /// The clients' request counts under `access.rate-limit` (share one among the listeners
        /// of a process: the limit is per client address, whichever listener it uses). Default: new.
        public var rateLimiter: ClientRateLimiter
        /// Every connection starts with a load balancer's PROXY protocol header (v1 or v2), whose
        /// source address is the client's (`listen[].proxy-protocol`); only a peer in
        /// `access.trusted-forwarders` may send one. Default: false.
        public var proxyProtocol: Bool
        /// A slower network between the listener and its clients (`listen[].throttle`): the
        /// kernel paces what each connection sends, ``InboundThrottleHandler`` what it reads.
        /// Default: nil, no throttling.
        public var throttle: PolicyConfiguration.Listener.Throttle?
        /// The most connections the listener serves at once (`listen[].max-connections`): at the
        /// limit it stops accepting (``AcceptGateHandler``). Default: nil, no limit.
        public var maxConnections: Int?
        /// The clients' open connections under `access.connection-limit` (share one among the
        /// listeners of a process: the limit is per client address). Default: new.
        public var connectionCounter: ClientConnectionCounter
        /// A socket already bound to ``listen`` and listening, passed by a service manager
        /// (``InheritedListeners``): served instead of binding one. Default: nil.
        public var inheritedSocket: CInt?
        /// Where the OCSP responses a TLS listener fetches (`ocsp-stapling`) are kept across
        /// restarts (share one among the listeners of a process). Nil: kept in memory only.
        /// Default: nil.
        public var stapleArchive: OCSPStapleArchive?

        /// Creates a configuration; every argument has the embedded default's value.
        public init(
            listen: ListenAddress = .defaultForward,
            mode: ListenerMode = .forward,
            accessLog: AccessLog = .standardError,
            metrics: ProxyMetrics = ProxyMetrics(),
            interceptor: Interceptor? = nil,
            offline: OfflineMode = OfflineMode(),
            tls: PolicyConfiguration.Listener.TLS? = nil,
            h2c: Bool = false,
            rateLimiter: ClientRateLimiter = ClientRateLimiter(),
            proxyProtocol: Bool = false,
            throttle: PolicyConfiguration.Listener.Throttle? = nil,
            maxConnections: Int? = nil,
            connectionCounter: ClientConnectionCounter = ClientConnectionCounter(),
            inheritedSocket: CInt? = nil,
            stapleArchive: OCSPStapleArchive? = nil
        ) {
            self.stapleArchive = stapleArchive
            self.inheritedSocket = inheritedSocket
            self.maxConnections = maxConnections
            self.connectionCounter = connectionCounter
            self.throttle = throttle
            self.proxyProtocol = proxyProtocol
            self.rateLimiter = rateLimiter
            self.tls = tls
            self.h2c = h2c
            self.interceptor = interceptor
            self.offline = offline
            self.metrics = metrics
            self.listen = listen
            self.mode = mode
            self.accessLog = accessLog
        }
    }

    /// The configuration of the session a server makes when it is given no policy: `.default`,
    /// without a User-Agent of its own so that the client's passes through untouched, and the
    /// proxy's connection limit per origin (`SessionSettings.defaultMaxConnectionsPerHost`, not
    /// URLSession's 6: the session serves many clients), and server-push bodies relayed whole.
    public static var defaultSessionConfiguration: SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.userAgent = nil
        configuration.httpMaximumConnectionsPerHost = SessionSettings.defaultMaxConnectionsPerHost
        configuration.deliversMultipartReplaceParts = false  // relayed whole; the client splits
        return configuration
    }
}

/// The session delegate of a server's own session: a proxy passes redirects to its client
/// (following them is the client's business) instead of the session's default of following.
final class PassRedirectsDelegate: SessionDelegate, TaskDelegate {
    func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        completionHandler(.deliverRedirectResponse)
    }
}
