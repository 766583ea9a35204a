import TollgateTLS

extension Session {
    /// Decides the server trust of a health check's TLS handshake with `host:port` and calls
    /// `decided` with the failure the answer means, nil when the server is trusted
    /// (``ServerTrustAnswer``): the session delegate's ``HealthCheckTrustDeciding`` answer — the
    /// rules a request's connection is judged by, without the report each refusal makes —, else
    /// (no delegate, or one that does not adopt it) default handling, the chain as OpenSSL
    /// verified it against the host's roots.
    ///
    /// Static, given the delegate: the checker holds it for as long as it runs (until the pool
    /// shuts down with the session's invalidation). A weak reference to the session would give it
    /// a side table, and every retain and release of it — several a request — the slow path.
    static func decideServerTrustForCheck(
        _ evaluation: TLSPeerEvaluation, host: String, port: Int, delegate: (any SessionDelegate)?,
        then decided: @escaping @Sendable (SessionError?) -> Void
    ) {
        let disposition = (delegate as? any HealthCheckTrustDeciding)?.healthCheckTrust(host: host, port: port, evaluation: evaluation)
        decided(ServerTrustAnswer.failure(evaluation, disposition: disposition, host: host, url: nil))
    }
}
