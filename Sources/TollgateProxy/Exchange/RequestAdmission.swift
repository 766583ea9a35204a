import TollgateHTTP

/// Who answers a request head before any exchange exists: the proxy itself — a client outside
/// `access.clients`, a target the listener refuses (``RequestTarget``), missing or wrong proxy
/// credentials on a forward listener — or an exchange for the target. The same decision for an
/// HTTP/1.1 request (``ClientConnectionHandler``) and an HTTP/2 stream (``HTTP2StreamHandler``).
enum RequestAdmission {
    /// Answer with this; `closeConnection`: an HTTP/1.1 connection closes after it (a denied client).
    case answer(OwnResponse, closeConnection: Bool)
    /// Start the exchange for this target (never ``RequestTarget/refuse(_:)``).
    case exchange(RequestTarget)

    /// The decision for `head` on a connection whose client is (or is not) `clientAllowed`.
    static func decide(
        _ head: ClientRequestHead,
        clientAllowed: Bool,
        environment: ListenerEnvironment,
        memo: ConnectionMemo
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
        let target = RequestTarget.classify(head, mode: environment.mode) { host throws(CanonicalHost.Invalid) in
            try memo.canonicalHost(host)
        }
        if case .refuse(let answer) = target { return .answer(answer, closeConnection: false) }
        // Inside an intercepted tunnel the CONNECT was the authenticated request.
        if case .forward = environment.mode, let authenticator = memo.exchangeRules(environment).authenticator,
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
}
