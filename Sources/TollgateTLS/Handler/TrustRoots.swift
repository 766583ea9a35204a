internal import COpenSSL
import Foundation

/// The certificates a TLS endpoint trusts as anchors when it verifies its peer, and the revocation
/// lists it checks the peer's chain against.
///
/// Any combination of the system roots, PEM bundle files and certificates in memory. With any
/// revocation list (in memory or in a file), every certificate of a chain but its anchor must be
/// covered by a list from its issuer and not revoked (``CertificateRevocationList``). The system roots are
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

    /// Revocation lists checked; none (no revocation check) unless given.
    public var revocationLists: [CertificateRevocationList]

    /// Files of revocation lists (PEM or DER), read when the context is built; none unless given.
    public var revocationListFiles: [String]

    /// Trust roots from the system, PEM files and certificates.
    ///
    /// - Parameters:
    ///   - includesSystemRoots: also trust the system roots.
    ///   - pemFiles: PEM bundle files to trust.
    ///   - certificates: certificates to trust.
    ///   - revocationLists: revocation lists to check chains against.
    ///   - revocationListFiles: files of revocation lists to check chains against.
    public init(
        includesSystemRoots: Bool = false,
        pemFiles: [String] = [],
        certificates: [Certificate] = [],
        revocationLists: [CertificateRevocationList] = [],
        revocationListFiles: [String] = []
    ) {
        self.includesSystemRoots = includesSystemRoots
        self.pemFiles = pemFiles
        self.certificates = certificates
        self.revocationLists = revocationLists
        self.revocationListFiles = revocationListFiles
    }

    /// The file of the system roots OpenSSL reads (`X509_get_default_cert_file`: on Debian
    /// `/usr/lib/ssl/cert.pem`, the same bundle as `/etc/ssl/certs/ca-certificates.crt`), whatever
    /// `SSL_CERT_FILE` says; nil when it does not exist.
    public static var systemBundleFile: String? {
        let path = String(cString: X509_get_default_cert_file())
        return FileManager.default.fileExists(atPath: path) ? path : nil
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

    /// Every revocation list, files read now.
    func allRevocationLists() throws -> [CertificateRevocationList] {
        try self.revocationLists + self.revocationListFiles.flatMap { try CertificateRevocationList.lists(inFile: $0) }
    }
}
