internal import COpenSSL
import Foundation

/// A certificate authority that mints certificates: the local CA for TLS interception, and the test CA.
///
/// A root is created with ``create(commonName:key:validityDays:notBeforeOffset:now:)`` or loaded from PEM
/// files; it can issue leaves (``issueLeaf(for:key:usage:validity:notBeforeOffset:now:)``) and
/// intermediates (``issueIntermediate(commonName:key:validityDays:notBeforeOffset:now:)``), which are
/// authorities themselves, so tests can build chains of any depth.
///
/// Every certificate is X.509 v3, has a random positive 16-byte serial number and is signed with SHA-256.
/// Validity is given relative to `now`, and both may lie in the past, which is how tests make expired
/// certificates.
public struct CertificateAuthority: Sendable {
    /// The authority's own certificate.
    public let certificate: Certificate

    /// The authority's signing key.
    public let privateKey: PrivateKey

    /// What a server presents after a leaf this authority issued, nearest first: empty for a root; for an
    /// intermediate, its own certificate followed by its parent's intermediates.
    public let intermediates: [Certificate]

    /// An authority from a CA certificate and its key.
    ///
    /// - Parameters:
    ///   - certificate: a certificate with basicConstraints `CA:TRUE`.
    ///   - privateKey: the key matching `certificate`.
    ///   - intermediates: see ``intermediates``; for an intermediate authority this starts with `certificate`.
    /// - Throws: ``OpenSSLError/invalidArgument`` when the certificate is not a CA or the key does not match.
    public init(certificate: Certificate, privateKey: PrivateKey, intermediates: [Certificate] = []) throws {
        guard certificate.isCA else {
            throw OpenSSLError(
                .invalidArgument,
                exactly: "\(certificate.subject) is not a CA certificate (basicConstraints CA:TRUE is missing)"
            )
        }
        try certificate.requireMatch(privateKey)
        self.certificate = certificate
        self.privateKey = privateKey
        self.intermediates = intermediates
    }

    /// Loads an authority from a PEM certificate file and a PEM private key file.
    ///
    /// The certificate file may hold a chain: the authority's certificate first, then its issuers. When
    /// the authority is not self-signed, that whole chain becomes ``intermediates``.
    ///
    /// - Throws: ``OpenSSLError/io``, ``OpenSSLError/invalidPEM``, or ``OpenSSLError/invalidArgument``.
    public init(certificatePEMFile: String, privateKeyPEMFile: String) throws {
        let chain = try Certificate.bundle(pemFile: certificatePEMFile)
        let key = try PrivateKey(pemFile: privateKeyPEMFile)
        try self.init(certificate: chain[0], privateKey: key, intermediates: chain[0].isSelfSigned ? [] : chain)
    }

    /// Creates a self-signed root CA.
    ///
    /// The certificate has subject `CN=<commonName>`, basicConstraints `CA:TRUE` (critical), keyUsage
    /// `keyCertSign, cRLSign` (critical) and a subjectKeyIdentifier.
    ///
    /// - Parameters:
    ///   - commonName: the subject's CN, such as `Tollgate Local CA`.
    ///   - key: the CA key; a new EC P-256 key when nil.
    ///   - validityDays: days from the start of validity to its end; 3650 unless given.
    ///   - notBeforeOffset: seconds added to `now` for the start of validity; −3600 (an hour of clock skew).
    ///   - now: the reference time; the current time unless given.
    public static func create(
        commonName: String,
        key: PrivateKey? = nil,
        validityDays: Int = 3650,
        notBeforeOffset: TimeInterval = -3600,
        now: Date = Date()
    ) throws -> CertificateAuthority {
        let key = try key ?? PrivateKey(generating: .ecP256)
        let notBefore = now.addingTimeInterval(notBeforeOffset)
        let builder = CertificateBuilder(
            commonName: try CertificateAuthority.checkedCommonName(commonName),
            subjectKey: key,
            notBefore: notBefore,
            notAfter: notBefore.addingTimeInterval(TimeInterval(validityDays) * 86_400),
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ]
        )
        return CertificateAuthority(verified: try builder.build(issuer: nil), key: key, intermediates: [])
    }

    /// Issues an intermediate CA (basicConstraints `CA:TRUE, pathlen:0`, critical) under this authority.
    ///
    /// - Parameters:
    ///   - commonName: the intermediate's CN.
    ///   - key: its key; a new EC P-256 key when nil.
    ///   - validityDays: days of validity; 1825 unless given.
    ///   - notBeforeOffset: seconds added to `now` for the start of validity; −3600 unless given.
    ///   - now: the reference time; the current time unless given.
    public func issueIntermediate(
        commonName: String,
        key: PrivateKey? = nil,
        validityDays: Int = 1825,
        notBeforeOffset: TimeInterval = -3600,
        now: Date = Date()
    ) throws -> CertificateAuthority {
        let key = try key ?? PrivateKey(generating: .ecP256)
        let notBefore = now.addingTimeInterval(notBeforeOffset)
        let builder = CertificateBuilder(
            commonName: try CertificateAuthority.checkedCommonName(commonName),
            subjectKey: key,
            notBefore: notBefore,
            notAfter: notBefore.addingTimeInterval(TimeInterval(validityDays) * 86_400),
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid,issuer"),
            ]
        )
        let certificate = try builder.build(issuer: (self.certificate, self.privateKey))
        return CertificateAuthority(verified: certificate, key: key, intermediates: [certificate] + self.intermediates)
    }

    /// Issues a leaf certificate for a host.
    ///
    /// The subjectAltName is the host: an `iPAddress` when `host` parses as IPv4 or IPv6 (brackets allowed),
    /// otherwise a `dNSName`. The CN is the host too, unless it is longer than the 64 characters a CN may
    /// hold; then the subject is empty and the SAN is critical. Also: basicConstraints `CA:FALSE`
    /// (critical), keyUsage `digitalSignature, keyEncipherment` (critical), extendedKeyUsage from `usage`,
    /// subjectKeyIdentifier and authorityKeyIdentifier.
    ///
    /// - Parameters:
    ///   - host: a DNS name (ASCII; IDNs in their `xn--` form; a leading `*.` makes a wildcard) or an IP address.
    ///   - key: the leaf's key; a new EC P-256 key when nil.
    ///   - usage: ``ExtendedKeyUsage/serverAuth`` unless given; add ``ExtendedKeyUsage/clientAuth`` for a
    ///     client certificate.
    ///   - validity: seconds from the start of validity to its end; 30 days unless given.
    ///   - notBeforeOffset: seconds added to `now` for the start of validity; −3600 unless given.
    ///   - now: the reference time; the current time unless given.
    ///   - ocspResponder: an OCSP responder URL for authorityInfoAccess (`OCSP;URI:`), as public
    ///     CAs name theirs; none unless given.
    ///   - mustStaple: the TLS Feature extension with `status_request` (OCSP must-staple, RFC 7633);
    ///     false unless given.
    /// - Returns: the leaf, this authority's ``intermediates`` and the leaf's key.
    /// - Throws: ``OpenSSLError/invalidArgument`` for a host that cannot go in a certificate.
    public func issueLeaf(
        for host: String,
        key: PrivateKey? = nil,
        usage: ExtendedKeyUsage = .serverAuth,
        validity: TimeInterval = 30 * 86_400,
        notBeforeOffset: TimeInterval = -3600,
        now: Date = Date(),
        ocspResponder: String? = nil,
        mustStaple: Bool = false
    ) throws -> Identity {
        let name = try CertificateAuthority.alternativeName(for: host)
        guard !usage.isEmpty else {
            throw OpenSSLError(.invalidArgument, exactly: "a leaf certificate needs at least one extended key usage")
        }
        let key = try key ?? PrivateKey(generating: .ecP256)
        let commonName: String
        switch name {
        case .dnsName(let dns): commonName = dns
        case .ipAddress(let ip): commonName = ip
        }
        let notBefore = now.addingTimeInterval(notBeforeOffset)
        let builder = CertificateBuilder(
            commonName: commonName.utf8.count <= 64 ? commonName : nil,
            subjectKey: key,
            notBefore: notBefore,
            notAfter: notBefore.addingTimeInterval(validity),
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                (NID_ext_key_usage, usage.configValue),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid,issuer"),
            ] + (ocspResponder.map { [(NID_info_access, "OCSP;URI:\($0)")] } ?? [])
                + (mustStaple ? [(NID_tlsfeature, "status_request")] : []),
            alternativeNames: [name]
        )
        let leaf = try builder.build(issuer: (self.certificate, self.privateKey))
        return Identity(unchecked: [leaf] + self.intermediates, privateKey: key)
    }

    private init(verified certificate: Certificate, key: PrivateKey, intermediates: [Certificate]) {
        self.certificate = certificate
        self.privateKey = key
        self.intermediates = intermediates
    }

    private static func checkedCommonName(_ name: String) throws -> String {
        guard !name.isEmpty, name.utf8.count <= 64, !name.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw OpenSSLError(
                .invalidArgument,
                exactly: "a CA common name must be 1 to 64 bytes without control characters"
            )
        }
        return name
    }

    /// The SAN entry for `host`, or an error saying why it cannot be one.
    static func alternativeName(for host: String) throws -> SubjectAlternativeName {
        if let bytes = IPAddress.parse(host), let text = IPAddress.format(bytes) {
            return .ipAddress(text)
        }
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        func reject(_ why: String) -> OpenSSLError {
            OpenSSLError(.invalidArgument, exactly: "cannot issue a certificate for \"\(host)\": \(why)")
        }
        guard !name.isEmpty, name.utf8.count <= 253 else { throw reject("a host name has 1 to 253 characters") }
        guard name.allSatisfy({ $0.isASCII }) else {
            throw reject("use the ASCII (xn--) form of an internationalised name")
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if index == 0, label == "*", labels.count > 2 { continue }
            guard (1...63).contains(label.count) else { throw reject("each label has 1 to 63 characters") }
            guard label.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw reject("only letters, digits, '-' and '_' may appear in a label (and '*.' first)")
            }
        }
        return .dnsName(name)
    }
}
