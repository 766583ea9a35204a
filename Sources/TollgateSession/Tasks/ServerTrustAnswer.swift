import TollgateHTTP
import TollgateTLS

/// What an answer to a server-trust challenge means for the connection: a credential that trusts
/// the server accepts it; cancel and reject refuse it; default handling (or no answer) keeps the
/// chain's own verdict (what OpenSSL verified against the configured roots). Shared by a task's
/// connections (``SessionTask/evaluateServerTrust(_:host:port:then:)``) and the session's health
/// checks (``Session/decideServerTrustForCheck(_:host:port:then:)``).
enum ServerTrustAnswer {
    /// The failure `disposition` means for `evaluation` of `host`, nil when the server is trusted.
    static func failure(_ evaluation: TLSPeerEvaluation, disposition: ChallengeDisposition?, host: String, url: HTTPURL?) -> SessionError? {
        let untrusted: SessionError? = {
            switch evaluation.trustResult {
            case .trusted: return nil
            case .untrusted(let verification):
                return SessionError(.serverCertificateUntrusted, url, "\(host): \(verification)")
            case .noCertificate:
                return SessionError(.serverCertificateUntrusted, url, "\(host) presented no certificate")
            }
        }()
        switch disposition?.base {
        case .useCredential(let credential?) where credential.trustsServer:
            return nil
        case .cancelAuthenticationChallenge(let reason):
            return reason ?? SessionError(.cancelled, url, "the server-trust challenge was cancelled")
        case .rejectProtectionSpace:
            return untrusted ?? SessionError(.serverCertificateUntrusted, url, "\(host): trust rejected")
        default:
            return untrusted
        }
    }
}
