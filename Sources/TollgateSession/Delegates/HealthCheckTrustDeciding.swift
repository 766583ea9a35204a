public import TollgateTLS

/// A session delegate that decides a health check's server trust itself, at once and without the
/// side effects of its server-trust challenge (the log line and count of each refusal): a
/// `connect-to-check` with `tls` checks a backend every few seconds, and one with a bad
/// certificate would otherwise be reported at every check. The check's own failure is reported
/// once, when the backend goes down (``ConnectionTargetWalk``). With a delegate that does not
/// adopt it, a check's handshake gets default handling: the chain as OpenSSL verified it against
/// the host's roots (no pins).
public protocol HealthCheckTrustDeciding: SessionDelegate {
    /// The answer to the server-trust challenge of a check's handshake with `host:port`, as the
    /// session-level challenge would get it.
    func healthCheckTrust(host: String, port: Int, evaluation: TLSPeerEvaluation) -> ChallengeDisposition
}
