import TollgateHTTP
import TollgatePolicy

/// Who answers a request head before any exchange exists: the proxy itself — a client outside
/// `access.clients`, a target the listener refuses (``RequestTarget``), missing or wrong proxy
/// credentials on a forward listener — or an exchange for the target. The same decision for an
/// HTTP/1.1 request (``ClientConnectionHandler``) and an HTTP/2 stream (``HTTP2StreamHandler``).
enum RequestAdmission {
    /// Answer with this; `closeConnection`: an HTTP/1.1 connection closes after it (a denied client).
    case answer(OwnResponse, closeConnection: Bool)
    /// Start the exchange for this target (never ``RequestTarget/refuse(_:)``).
    case exchange(RequestTarget)

    /// The decision for `head` on a connection whose client is (or is not) `clientAllowed`, under
    /// `rules` (the connection's, ``ConnectionMemo/exchangeRules(_:)``: fetched once by the caller,
    /// which starts the exchange with them too).
    static func decide(
        _ head: ClientRequestHead,
        clientAllowed: Bool,
        environment: ListenerEnvironment,
        memo: ConnectionMemo,
        rules: ExchangeRules
    ) -> RequestAdmission {
        guard clientAllowed else {
            return .answer(
                OwnResponse(
                    .clientDenied,
                    "client \(memo.clientAddress) is not allowed to use this proxy (access.clients)"
                ),
                closeConnection: true
            )
        }
        if let limit = memo.overConnectionLimit {
            return .answer(
                OwnResponse(
                    .tooManyConnections,
                    "client \(memo.clientLimitKey) has \(limit) connections open already, as many as access.connection-limit allows"
                ),
                closeConnection: true
            )
        }
        if let limit = rules.rateLimit,
            let wait = environment.rateLimiter.admit(memo.clientLimitKey, under: limit)
        {
            return .answer(rateLimited(memo.clientLimitKey, wait: wait, limit: limit), closeConnection: false)
        }
        let target = RequestTarget.classify(head, mode: environment.mode) { host throws(CanonicalHost.Invalid) in
            try memo.canonicalHost(host)
        }
        if case .refuse(let answer) = target { return .answer(answer, closeConnection: false) }
        // Inside an intercepted tunnel the CONNECT was the authenticated request.
        if case .forward = environment.mode, let authenticator = rules.authenticator,
            authenticator.isEnabled,
            authenticator.user(for: head.headerFields[.proxyAuthorization]) == nil
        {
            let said =
                head.headerFields.contains(.proxyAuthorization)
                ? "the proxy credentials were not accepted" : "proxy authentication required"
            return .answer(ProxyAuthenticator.challenge(said), closeConnection: false)
        }
        return .exchange(target)
    }

    /// `429 rate-limited`, with `Retry-After` in whole seconds (at least 1) until the client may
    /// make a request again.
    private static func rateLimited(_ client: String, wait: Duration, limit: PolicyConfiguration.Access.RateLimit) -> OwnResponse {
        let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
        // As written: a rate under one a second that is whole per minute was written per minute.
        let perMinute = limit.requestsPerSecond * 60
        let rate = limit.requestsPerSecond < 1 && perMinute == perMinute.rounded()
            ? "\(Self.number(perMinute))/m" : "\(Self.number(limit.requestsPerSecond))/s"
        var answer = OwnResponse(
            .rateLimited,
            "client \(client) made more requests than access.rate-limit allows (\(rate), burst \(limit.burst)); retry in \(seconds)s"
        )
        answer.extraFields.add(name: "Retry-After", value: String(seconds))
        return answer
    }

    /// `20`, or `0.5`: a rate as written.
    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
