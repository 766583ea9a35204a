import Foundation
import TollgatePolicy
import TollgateTLS

/// What a TLS listener staples for one of its certificates, as `/metrics` and `GET /listeners`
/// report it: the response in its `ocsp-response` file (read now), or the one its
/// ``OCSPStapleFetcher`` fetched last (`ocsp-stapling`).
enum ListenerStaple {
    /// From the file: the response, or why it cannot be read for the certificate.
    case file(Result<OCSPResponse, any Error>)
    /// Fetched: the current response, nil when none is (not yet fetched, every fetch failed).
    case fetched(OCSPResponse?)

    /// What `files` (of a listener with `tls`, at `address`; `chain` its certificate file's
    /// chain) staples; nil when it staples nothing.
    static func of(
        _ files: PolicyConfiguration.Listener.TLS.CertificateFiles, chain: [Certificate], tls: PolicyConfiguration.Listener.TLS,
        address: String, fetchers: [String: OCSPStapleFetcher]
    ) -> ListenerStaple? {
        if let file = files.ocspResponse {
            return .file(Result { try OCSPResponse(contentsOf: file, for: chain) })
        }
        guard tls.ocspStapling else { return nil }
        return .fetched(fetchers[address]?.stapled(forCertificateFile: files.certificate) ?? nil)
    }
}
