/// How much of the peer's certificate a TLS endpoint checks.
///
/// Whatever the choice, OpenSSL's verdict on the chain is recorded in the ``TLSPeerEvaluation`` that
/// ``TLSHandshakeCompleted`` carries; the choice decides what is checked and, unless
/// ``TLSConfiguration/deferTrustDecision`` is set, whether a failure ends the handshake.
public struct CertificateVerification: Hashable, Sendable, CustomStringConvertible {
    private enum Mode: Hashable, Sendable {
        case full
        case noHostname
        case none
    }

    private let mode: Mode

    /// The chain must lead to a trust root and the leaf must be valid for the server host name or IP
    /// address: the default.
    public static let fullVerification = CertificateVerification(mode: .full)

    /// The chain must lead to a trust root; the leaf's names are not checked.
    public static let noHostnameVerification = CertificateVerification(mode: .noHostname)

    /// Nothing is enforced: the handshake succeeds whatever the peer presents. The verdict is still
    /// recorded (without the host check), for logs and `tollgate trust pin`.
    public static let none = CertificateVerification(mode: .none)

    /// Whether a chain that does not verify fails the handshake (unless trust is deferred).
    var enforcesTrust: Bool { self.mode != .none }

    /// Whether the leaf is checked against the host name.
    var checksHostname: Bool { self.mode == .full }

    /// `fullVerification`, `noHostnameVerification` or `none`.
    public var description: String {
        switch self.mode {
        case .full: "fullVerification"
        case .noHostname: "noHostnameVerification"
        case .none: "none"
        }
    }
}

/// Whether a TLS server asks its clients for a certificate.
///
/// Client certificates are verified against the server's ``TLSConfiguration/trustRoots``; the
/// certificates named there explicitly (not the system roots) are also sent to the client as the list of
/// acceptable CAs.
public struct ClientCertificateRequirement: Hashable, Sendable, CustomStringConvertible {
    private enum Mode: Hashable, Sendable {
        case notRequested
        case requested
        case required
    }

    private let mode: Mode

    /// The server does not ask for a client certificate: the default.
    public static let notRequested = ClientCertificateRequirement(mode: .notRequested)

    /// The server asks; a client that sends none is still accepted (``TLSPeerEvaluation/TrustResult/noCertificate``).
    public static let requested = ClientCertificateRequirement(mode: .requested)

    /// The server asks, and a client that sends none fails the handshake.
    public static let required = ClientCertificateRequirement(mode: .required)

    var asksForCertificate: Bool { self.mode != .notRequested }
    var failsWithoutCertificate: Bool { self.mode == .required }

    /// `notRequested`, `requested` or `required`.
    public var description: String {
        switch self.mode {
        case .notRequested: "notRequested"
        case .requested: "requested"
        case .required: "required"
        }
    }
}
