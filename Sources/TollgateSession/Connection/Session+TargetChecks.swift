import TollgateTLS

extension Session {
    /// Decides the server trust of a health check's TLS handshake with `host:port` as a request's
    /// connection's would be, at the session level — the session delegate's server-trust
    /// challenge (a check has no task to ask), or its ``HealthCheckTrustDeciding`` answer, which
    /// reports nothing — and calls `decided` with the failure the answer
    /// means, nil when the server is trusted (``ServerTrustAnswer``). Without a delegate, or when
    /// it does not answer, the chain's own verdict stands.
    func decideServerTrustForCheck(
        _ evaluation: TLSPeerEvaluation, host: String, port: Int, then decided: @escaping @Sendable (SessionError?) -> Void
    ) {
        guard let delegate else {
            decided(ServerTrustAnswer.failure(evaluation, disposition: nil, host: host, url: nil))
            return
        }
        if let decider = delegate as? any HealthCheckTrustDeciding {
            let disposition = decider.healthCheckTrust(host: host, port: port, evaluation: evaluation)
            decided(ServerTrustAnswer.failure(evaluation, disposition: disposition, host: host, url: nil))
            return
        }
        let space = ProtectionSpace(host: host, port: port, protocol: "https", authenticationMethod: .serverTrust)
        delegate.session(self, didReceive: AuthenticationChallenge(protectionSpace: space, serverTrust: evaluation)) { disposition in
            decided(ServerTrustAnswer.failure(evaluation, disposition: disposition, host: host, url: nil))
        }
    }
}
