internal import COpenSSL
import Foundation

/// Verifies a presented certificate chain against a set of trust anchors, as a TLS client does.
///
/// The trust store holds the given certificates and, optionally, the system roots (OpenSSL's default
/// paths: on Debian `/etc/ssl/certs/ca-certificates.crt` and the hashed `/etc/ssl/certs` directory,
/// overridable with `SSL_CERT_FILE` and `SSL_CERT_DIR`). It is built once and only read afterwards.
///
/// Verification is OpenSSL's `X509_verify_cert` with the host check done by OpenSSL as well (partial
/// wildcards such as `f*.example.com` are refused) and the purpose checked against the leaf's
/// extendedKeyUsage. Pinning is separate and runs on the chain this returns; see
/// ``ChainVerifier/checkPins(chain:pins:host:)``.
///
/// `@unchecked Sendable`: the `X509_STORE` is not modified after `init`, and OpenSSL locks the store
/// internally for the lookups verification does, so concurrent `verify` calls are safe.
public final class ChainVerifier: @unchecked Sendable {
    /// What the leaf certificate must be good for.
    public struct Purpose: Hashable, Sendable {
        fileprivate let value: Int32

        /// A TLS server certificate (extendedKeyUsage serverAuth when present).
        public static let serverAuth = Purpose(value: X509_PURPOSE_SSL_SERVER)
        /// A TLS client certificate (extendedKeyUsage clientAuth when present).
        public static let clientAuth = Purpose(value: X509_PURPOSE_SSL_CLIENT)
    }

    /// The owned `X509_STORE*`; freed on deinit.
    let store: OpaquePointer

    /// Whether chains are checked against revocation lists.
    public let checksRevocation: Bool

    /// The verification flags of a revocation check: every certificate of a chain but its anchor.
    static let revocationFlags = UInt(X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL)

    /// Creates a verifier trusting `trustedCertificates` and, if asked, the system roots.
    ///
    /// - Parameters:
    ///   - trustedCertificates: trust anchors (typically self-signed roots).
    ///   - systemRoots: also trust OpenSSL's default CA file and directory.
    ///   - revocationLists: when not empty, every certificate of a chain but its anchor is checked
    ///     against its issuer's list (``CertificateRevocationList``): `X509_V_FLAG_CRL_CHECK` and
    ///     `X509_V_FLAG_CRL_CHECK_ALL`.
    /// - Throws: ``OpenSSLError/trustStore``.
    public init(
        trustedCertificates: [Certificate] = [],
        systemRoots: Bool = false,
        revocationLists: [CertificateRevocationList] = []
    ) throws {
        tg_ERR_clear_error()
        guard let store = X509_STORE_new() else { throw OpenSSLError(.trustStore, "allocating a trust store") }
        do {
            if systemRoots, X509_STORE_set_default_paths(store) != 1 {
                throw OpenSSLError(.trustStore, "loading the system trust roots")
            }
            for certificate in trustedCertificates where X509_STORE_add_cert(store, certificate.x509) != 1 {
                throw OpenSSLError(.trustStore, "adding \(certificate.subject) to the trust store")
            }
            for list in revocationLists where X509_STORE_add_crl(store, list.crl) != 1 {
                throw OpenSSLError(.trustStore, "adding the CRL of \(list.issuer) to the trust store")
            }
            if !revocationLists.isEmpty,
                X509_STORE_set_flags(store, Self.revocationFlags) != 1
            {
                throw OpenSSLError(.trustStore, "turning on the CRL check")
            }
        } catch {
            X509_STORE_free(store)
            throw error
        }
        self.store = store
        self.checksRevocation = !revocationLists.isEmpty
    }

    /// Creates a verifier trusting every certificate in the PEM bundles and, if asked, the system roots.
    ///
    /// - Throws: ``OpenSSLError/invalidPEM`` for a damaged bundle, ``OpenSSLError/trustStore``.
    public convenience init(trustedPEMBundles: [String], systemRoots: Bool = false) throws {
        let certificates = try trustedPEMBundles.flatMap { try Certificate.bundle(pem: $0) }
        try self.init(trustedCertificates: certificates, systemRoots: systemRoots)
    }

    /// Creates a verifier trusting every certificate in the PEM files and, if asked, the system roots.
    ///
    /// - Throws: ``OpenSSLError/io``, ``OpenSSLError/invalidPEM``, ``OpenSSLError/trustStore``.
    public convenience init(trustedPEMFiles: [String], systemRoots: Bool = false) throws {
        let certificates = try trustedPEMFiles.flatMap { try Certificate.bundle(pemFile: $0) }
        try self.init(trustedCertificates: certificates, systemRoots: systemRoots)
    }

    deinit {
        X509_STORE_free(self.store)
    }

    /// Verifies `chain` and returns the chain OpenSSL built, from the leaf to the trust anchor.
    ///
    /// - Parameters:
    ///   - chain: the leaf first, then any intermediates in any order (as a server sends them).
    ///   - host: the name or IP address (brackets allowed) the leaf must be valid for; nil skips the check.
    ///   - purpose: ``Purpose/serverAuth`` unless given.
    ///   - time: check validity at this time instead of now (for tests and for replaying a decision).
    /// - Returns: the verified chain, leaf first, ending with the trusted certificate.
    /// - Throws: ``CertificateVerificationError`` when OpenSSL rejects the chain; ``OpenSSLError`` when
    ///   `chain` is empty or OpenSSL cannot set up the check.
    public func verify(
        chain: [Certificate],
        host: String?,
        purpose: Purpose = .serverAuth,
        at time: Date? = nil
    ) throws -> [Certificate] {
        guard let leaf = chain.first else {
            throw OpenSSLError(.invalidArgument, exactly: "cannot verify an empty certificate chain")
        }
        tg_ERR_clear_error()
        guard let context = X509_STORE_CTX_new(), let untrusted = tg_sk_X509_new_null() else {
            throw OpenSSLError(.trustStore, "allocating a verification context")
        }
        defer {
            X509_STORE_CTX_free(context)
            tg_sk_X509_free(untrusted)  // shallow: the certificates belong to `chain`
        }
        // The stack borrows the X509s without a reference; `chain` keeps them alive for this call.
        return try withExtendedLifetime(chain) {
            for certificate in chain.dropFirst() where tg_sk_X509_push(untrusted, certificate.x509) <= 0 {
                throw OpenSSLError(.trustStore, "building the untrusted chain")
            }
            guard X509_STORE_CTX_init(context, self.store, leaf.x509, untrusted) == 1,
                X509_STORE_CTX_set_purpose(context, purpose.value) == 1
            else {
                throw OpenSSLError(.trustStore, "initialising verification")
            }
            let parameters = X509_STORE_CTX_get0_param(context)
            if let time {
                X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970))
            }
            if let host {
                try ChainVerifier.expect(host: host, parameters)
            }

            guard X509_verify_cert(context) == 1 else {
                let depth = X509_STORE_CTX_get_error_depth(context)
                let subject = X509_STORE_CTX_get_current_cert(context).map {
                    Certificate.oneLine(X509_get_subject_name($0))
                }
                tg_ERR_clear_error()
                throw CertificateVerificationError(
                    code: .init(rawValue: X509_STORE_CTX_get_error(context)),
                    depth: Int(depth),
                    subject: subject,
                    host: host
                )
            }
            guard let built = X509_STORE_CTX_get1_chain(context) else {
                throw OpenSSLError(.trustStore, "reading the verified chain")
            }
            defer { tg_sk_X509_pop_free(built) }
            return try (0..<tg_sk_X509_num(built)).map { try Certificate(retaining: tg_sk_X509_value(built, $0)) }
        }
    }

    private static func expect(host: String, _ parameters: OpaquePointer?) throws {
        X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        if let bytes = IPAddress.parse(host), let address = IPAddress.format(bytes) {
            guard X509_VERIFY_PARAM_set1_ip_asc(parameters, address) == 1 else {
                throw OpenSSLError(.invalidArgument, "setting the expected IP address \(address)")
            }
        } else {
            guard !host.isEmpty, X509_VERIFY_PARAM_set1_host(parameters, host, host.utf8.count) == 1 else {
                throw OpenSSLError(.invalidArgument, "setting the expected host name \"\(host)\"")
            }
        }
    }
}
