internal import COpenSSL

/// OpenSSL rejected a certificate chain: the verify error code, its text, and where in the chain it arose.
///
/// ``reason`` is OpenSSL's own text for the code (`X509_verify_cert_error_string`), such as
/// "certificate has expired", "unable to get local issuer certificate" or "hostname mismatch", which is
/// also what `openssl verify` and `openssl s_client` print, so operators can search for it.
public struct CertificateVerificationError: Error, Hashable, CustomStringConvertible, Sendable {
    /// An OpenSSL `X509_V_ERR_*` code. The set is OpenSSL's and open-ended; the common ones have names.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The `X509_V_ERR_*` value.
        public let rawValue: Int32

        /// Wraps an `X509_V_ERR_*` value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT` (2).
        public static let unableToGetIssuerCertificate = Code(rawValue: X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT)
        /// `X509_V_ERR_CERT_SIGNATURE_FAILURE` (7).
        public static let certificateSignatureFailure = Code(rawValue: X509_V_ERR_CERT_SIGNATURE_FAILURE)
        /// `X509_V_ERR_CERT_NOT_YET_VALID` (9).
        public static let certificateNotYetValid = Code(rawValue: X509_V_ERR_CERT_NOT_YET_VALID)
        /// `X509_V_ERR_CERT_HAS_EXPIRED` (10).
        public static let certificateHasExpired = Code(rawValue: X509_V_ERR_CERT_HAS_EXPIRED)
        /// `X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT` (18): a self-signed leaf that is not trusted.
        public static let selfSignedLeaf = Code(rawValue: X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT)
        /// `X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN` (19): the chain ends in a root that is not trusted.
        public static let selfSignedCertificateInChain = Code(rawValue: X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN)
        /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY` (20): no trusted issuer was found.
        public static let unableToGetLocalIssuerCertificate = Code(
            rawValue: X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
        )
        /// `X509_V_ERR_UNABLE_TO_GET_CRL` (3): revocation is checked and no CRL of the certificate's
        /// issuer was given.
        public static let unableToGetCRL = Code(rawValue: X509_V_ERR_UNABLE_TO_GET_CRL)
        /// `X509_V_ERR_CRL_HAS_EXPIRED` (12): the issuer's CRL is past its `nextUpdate`.
        public static let crlHasExpired = Code(rawValue: X509_V_ERR_CRL_HAS_EXPIRED)
        /// `X509_V_ERR_CERT_REVOKED` (23).
        public static let certificateRevoked = Code(rawValue: X509_V_ERR_CERT_REVOKED)
        /// `X509_V_ERR_INVALID_CA` (24): an issuer that is not a CA.
        public static let invalidCA = Code(rawValue: X509_V_ERR_INVALID_CA)
        /// `X509_V_ERR_PATH_LENGTH_EXCEEDED` (25).
        public static let pathLengthExceeded = Code(rawValue: X509_V_ERR_PATH_LENGTH_EXCEEDED)
        /// `X509_V_ERR_INVALID_PURPOSE` (26): for example a leaf without serverAuth used by a server.
        public static let invalidPurpose = Code(rawValue: X509_V_ERR_INVALID_PURPOSE)
        /// `X509_V_ERR_CERT_REJECTED` (28): refused by a rule of the application's (a client's chain
        /// without a pinned key).
        public static let certificateRejected = Code(rawValue: X509_V_ERR_CERT_REJECTED)
        /// `X509_V_ERR_HOSTNAME_MISMATCH` (62).
        public static let hostnameMismatch = Code(rawValue: X509_V_ERR_HOSTNAME_MISMATCH)
        /// `X509_V_ERR_IP_ADDRESS_MISMATCH` (64).
        public static let ipAddressMismatch = Code(rawValue: X509_V_ERR_IP_ADDRESS_MISMATCH)

        /// OpenSSL's text for the code.
        public var description: String { String(cString: X509_verify_cert_error_string(Int(self.rawValue))) }
    }

    /// The verify error.
    public let code: Code

    /// OpenSSL's text for ``code``, such as "certificate has expired".
    public let reason: String

    /// The position in the chain of the certificate the error concerns (0 is the leaf).
    public let depth: Int

    /// The subject of that certificate, when OpenSSL names one.
    public let subject: String?

    /// The host that was checked, if any.
    public let host: String?

    /// An error for `code`, with OpenSSL's text as the reason unless `reason` says more.
    public init(code: Code, depth: Int = 0, subject: String? = nil, host: String? = nil, reason: String? = nil) {
        self.code = code
        self.reason = reason ?? code.description
        self.depth = depth
        self.subject = subject
        self.host = host
    }

    /// For example: `certificate verification failed for example.com: certificate has expired (X509 error 10
    /// at depth 0, CN=example.com)`.
    public var description: String {
        let target = self.host.map { " for \($0)" } ?? ""
        let certificate = self.subject.map { ", \($0)" } ?? ""
        return "certificate verification failed\(target): \(self.reason) "
            + "(X509 error \(self.code.rawValue) at depth \(self.depth)\(certificate))"
    }
}
