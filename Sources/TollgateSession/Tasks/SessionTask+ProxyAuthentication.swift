import TollgateHTTP

/// Answering the upstream proxy's `407` to a plain request (``UpstreamProxyAuthentication``);
/// a 407 that comes through a CONNECT tunnel is the origin's, not the proxy's, and is left alone.
extension SessionTask {
    /// The head as it goes on the wire: with `Proxy-Authorization` when it goes to the upstream
    /// proxy and the proxy has asked for the credential. A copy: the task's request never holds
    /// the secret.
    func headForProxy(_ head: HTTPRequestHead, viaProxy: Bool) -> HTTPRequestHead {
        guard viaProxy, let value = session.upstreamProxyAuthentication?.preemptiveValue else {
            engine.sentProxyAuthorization = false
            return head
        }
        engine.sentProxyAuthorization = true
        var head = head
        head.headerFields.replaceOrAdd(name: .proxyAuthorization, value: value)
        return head
    }

    /// A `407` from the upstream proxy to a request sent without the credential: the request goes
    /// once more (once the 407 has ended), now with it. Returns false when the 407 is the
    /// response: no credential configured, no Basic offered, or the credential was refused.
    func handleProxyAuthenticationRequired(_ head: HTTPResponseHead) -> Bool {
        guard head.status == 407, !engine.sentProxyAuthorization, let request = engine.request,
            let authentication = session.upstreamProxyAuthentication,
            let connection = engine.machine.connection, connection.key.viaProxy,
            authentication.answer(challenges: head.headerFields.values(for: "Proxy-Authenticate")) != nil
        else { return false }
        _ = engine.machine.holdForRetry(.proxyAuthentication, head: head, newRequest: request, follow: request)
        return true
    }
}
