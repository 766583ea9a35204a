public import TollgateHTTP

/// One active health check of a `connect-to` target (``SessionConfiguration/connectionTargetChecks``,
/// a Tollgate addition, HAProxy's `check`): how often, and what passes.
///
/// Without a ``probe`` the check is a TCP connection that is accepted (HAProxy's default); with
/// one it is what a request would meet there: a TLS handshake whose certificate the session's
/// delegate accepts (``HealthCheckTrustDeciding``, else default handling; `check-ssl`), and an
/// HTTP request answered with an expected status (`option httpchk`, `http-check expect status`).
public struct ConnectionTargetCheck: Hashable, Sendable {
    /// The target checked.
    public var target: ConnectionTarget
    /// How often a check starts.
    public var interval: Duration
    /// What the check asks beyond an accepted connection; nil for a TCP check.
    public var probe: ConnectionTargetProbe?
    /// How many checks in a row must fail to take the target out (HAProxy's `fall`), at least 1.
    public var fall: Int
    /// How many checks in a row must pass to bring back a target checks took out (HAProxy's
    /// `rise`), at least 1.
    public var rise: Int
    /// How long one check may take (HAProxy's `timeout check`); nil: the interval, at most 3 s.
    public var timeout: Duration?

    /// Creates a check; by default one failed check takes the target out and one passed check
    /// brings it back.
    public init(
        target: ConnectionTarget, interval: Duration, probe: ConnectionTargetProbe? = nil, fall: Int = 1, rise: Int = 1, timeout: Duration? = nil
    ) {
        self.target = target
        self.interval = interval
        self.probe = probe
        self.fall = max(1, fall)
        self.rise = max(1, rise)
        self.timeout = timeout
    }
}

/// What a health check asks of a target beyond an accepted connection (``ConnectionTargetCheck``).
public struct ConnectionTargetProbe: Hashable, Sendable {
    /// The request a check sends, and the statuses that pass.
    public struct Request: Hashable, Sendable {
        /// GET, HEAD or OPTIONS.
        public var method: HTTPMethod
        /// The request target, origin-form (`/healthz`, with a query if any).
        public var path: String
        /// The statuses that pass (HAProxy: 2xx and 3xx).
        public var expectedStatuses: ClosedRange<Int>
        /// Header fields sent besides `Host`, `User-Agent` and `Connection: close` (HAProxy's
        /// `http-check send hdr`): a token a health endpoint asks for, say. A `User-Agent` here
        /// replaces the check's own.
        public var headerFields: HeaderFields

        /// Creates a request; `expectedStatuses` defaults to 200–399.
        public init(method: HTTPMethod = .get, path: String, expectedStatuses: ClosedRange<Int> = 200...399, headerFields: HeaderFields = [:]) {
            self.method = method
            self.path = path
            self.expectedStatuses = expectedStatuses
            self.headerFields = headerFields
        }
    }

    /// The name the target is checked as: the TLS server name (and the name its certificate is
    /// trusted for, by the session's rules for it), and the request's `Host`.
    public var host: String
    /// Whether the connection starts with TLS, the certificate for ``host`` decided by the session
    /// delegate's ``HealthCheckTrustDeciding`` answer (else default handling).
    public var tls: Bool
    /// The HTTP request sent (over TLS when ``tls``); nil: the connection (and handshake) alone.
    public var request: Request?

    /// Creates a probe.
    public init(host: String, tls: Bool, request: Request?) {
        self.host = host
        self.tls = tls
        self.request = request
    }

    /// What it checks, for the log and `explain`: `TLS as api.internal, GET /healthz expecting 200-399`.
    public var summary: String {
        var parts: [String] = []
        if tls { parts.append("a TLS handshake as \(host)") }
        if let request {
            let statuses = request.expectedStatuses.count == 1
                ? "\(request.expectedStatuses.lowerBound)"
                : "\(request.expectedStatuses.lowerBound)-\(request.expectedStatuses.upperBound)"
            // The names alone: a value may be a token.
            let more = request.headerFields.map { ", \($0.name)" }.joined()
            parts.append("\(request.method) \(request.path) (Host \(host)\(more)) answered \(statuses)")
        }
        return parts.joined(separator: ", then ")
    }
}
