import TollgateTLS

/// Why a client's TLS handshake with a TLS listener failed, as `/metrics` counts it
/// (`tollgate_client_tls_handshake_failures_total{reason}`).
///
/// An operator running a TLS gateway watches these: `alert` rising after a certificate change
/// means clients refuse it; `failed` is mostly scanners and plain HTTP sent to the TLS port.
enum ClientHandshakeFailure: String, CaseIterable, Sendable {
    /// The client sent a fatal alert: it refused the certificate (an unknown CA, a name that does
    /// not match, an expired leaf) or the protocol version.
    case alert
    /// The handshake failed here: not TLS at all (plain HTTP to the TLS port), no common version
    /// (`min-version`) or cipher, a malformed message.
    case failed
    /// The client closed the connection before the handshake completed.
    case closed
    /// The listener's `client-auth` turned the client away: no certificate where one is
    /// required, or one its roots (and revocation lists) do not trust.
    case certificate

    /// The reason for `error`, caught before the handshake completed.
    init(_ error: any Error) {
        guard let tls = error as? TLSError else {
            self = .closed
            return
        }
        switch tls {
        case .alertReceived: self = .alert
        case .uncleanShutdown: self = .closed
        case .handshakeFailed where tls.peerClosed: self = .closed
        // A server verifies only a client's certificate; OpenSSL's reason when none came.
        case .peerUntrusted: self = .certificate
        case .handshakeFailed where tls.message.contains("peer did not return a certificate"): self = .certificate
        default: self = .failed
        }
    }
}
