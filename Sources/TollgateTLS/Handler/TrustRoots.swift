/// The certificates a TLS endpoint trusts as anchors when it verifies its peer.
///
/// Any combination of the system roots, PEM bundle files and certificates in memory. The system roots are
/// OpenSSL's default paths: on Debian `/etc/ssl/certs/ca-certificates.crt` and the hashed `/etc/ssl/certs`
/// directory, overridable with `SSL_CERT_FILE` and `SSL_CERT_DIR`.
///
/// Files are read when the ``TLSContext`` is built; a context cached by ``TLSContextCache`` keeps what the
/// files held then.
public struct TrustRoots: Hashable, Sendable {
    /// Whether OpenSSL's default CA file and directory are trusted; false unless given.
    public var includesSystemRoots: Bool

    /// PEM bundle files whose every certificate is trusted; none unless given.
    public var pemFiles: [String]

    /// Certificates trusted as anchors; none unless given.
    public var certificates: [Certificate]

    /// Trust roots from the system, PEM files and certificates.
    ///
    /// - Parameters:
    ///   - includesSystemRoots: also trust the system roots.
    ///   - pemFiles: PEM bundle files to trust.
    ///   - certificates: certificates to trust.
    public init(includesSystemRoots: Bool = false, pemFiles: [String] = [], certificates: [Certificate] = []) {
        self.includesSystemRoots = includesSystemRoots
        self.pemFiles = pemFiles
        self.certificates = certificates
    }

    /// The system roots only: the default for clients.
    public static let system = TrustRoots(includesSystemRoots: true)

    /// Nothing is trusted: the default for servers, which verify client certificates only when asked to.
    public static let empty = TrustRoots()

    /// Only `certificates`.
    public static func certificates(_ certificates: [Certificate]) -> TrustRoots {
        TrustRoots(certificates: certificates)
    }

    /// Only the certificates in the PEM bundle files at `paths`.
    public static func pemFiles(_ paths: [String]) -> TrustRoots {
        TrustRoots(pemFiles: paths)
    }

    /// Every certificate these roots name explicitly (files read now); the system roots are left out.
    func explicitCertificates() throws -> [Certificate] {
        try self.certificates + self.pemFiles.flatMap { try Certificate.bundle(pemFile: $0) }
    }
}
