internal import COpenSSL
import Foundation

/// An X.509 certificate, parsed and held by OpenSSL.
///
/// The DER encoding, validity dates and SubjectPublicKeyInfo pin are read once when the certificate is
/// created, so a certificate OpenSSL cannot fully read fails there and not later. Two certificates are
/// equal when their DER encodings are.
///
/// `@unchecked Sendable`: the wrapped `X509` is never modified after creation, and OpenSSL guards the
/// extension cache it fills lazily on first read with its own lock, so concurrent reads are safe.
public final class Certificate: @unchecked Sendable {
    /// The owned `X509*`; freed on deinit.
    let x509: OpaquePointer

    /// The DER encoding of the whole certificate.
    public let derBytes: [UInt8]

    /// The start of the validity period (`notBefore`).
    public let notBefore: Date

    /// The end of the validity period (`notAfter`).
    public let notAfter: Date

    /// The DER encoding of the SubjectPublicKeyInfo, exactly as it appears in the certificate.
    public let publicKeySPKIDER: [UInt8]

    /// The certificate's pin: `sha256/` and the base64 SHA-256 of ``publicKeySPKIDER``.
    public let spkiPin: SPKIPin

    /// Takes ownership of one reference to `x509`; on error the reference is released.
    init(taking x509: OpaquePointer) throws {
        // Read everything before initialising: a throwing init of a partly initialised class skips deinit.
        let der: [UInt8]
        let validity: (notBefore: Date, notAfter: Date)
        let spki: [UInt8]
        let pin: SPKIPin
        do {
            der = try Certificate.encode(x509)
            validity = (
                try OpenSSLDecoding.date(X509_get0_notBefore(x509), "a certificate's notBefore"),
                try OpenSSLDecoding.date(X509_get0_notAfter(x509), "a certificate's notAfter")
            )
            spki = try Certificate.spkiDER(x509)
            pin = try SPKIPin(spkiDER: spki)
        } catch {
            X509_free(x509)
            throw error
        }
        self.x509 = x509
        self.derBytes = der
        self.notBefore = validity.notBefore
        self.notAfter = validity.notAfter
        self.publicKeySPKIDER = spki
        self.spkiPin = pin
    }

    /// Takes a new reference to `x509` (the caller keeps its own).
    convenience init(retaining x509: OpaquePointer) throws {
        X509_up_ref(x509)
        try self.init(taking: x509)
    }

    deinit {
        X509_free(self.x509)
    }

    /// Parses the first certificate in PEM text.
    ///
    /// - Parameter pem: text containing a `-----BEGIN CERTIFICATE-----` block; other blocks are skipped.
    /// - Throws: ``OpenSSLError/invalidPEM`` when no certificate can be read.
    public convenience init(pem: String) throws {
        try self.init(pemBytes: Array(pem.utf8))
    }

    /// Parses the first certificate in PEM bytes.
    ///
    /// - Parameter pemBytes: ASCII PEM text.
    /// - Throws: ``OpenSSLError/invalidPEM`` when no certificate can be read.
    public convenience init(pemBytes: [UInt8]) throws {
        let x509 = try MemoryBIO.withReading(pemBytes) { bio -> OpaquePointer in
            tg_ERR_clear_error()
            guard let x509 = PEM_read_bio_X509(bio, nil, noPassphrase, nil) else {
                throw OpenSSLError(.invalidPEM, "reading a PEM certificate")
            }
            return x509
        }
        try self.init(taking: x509)
    }

    /// Parses a DER-encoded certificate.
    ///
    /// - Parameter der: exactly one DER certificate; trailing bytes are an error.
    /// - Throws: ``OpenSSLError/invalidDER``.
    public convenience init(der: [UInt8]) throws {
        tg_ERR_clear_error()
        let x509 = try der.withUnsafeBufferPointer { buffer -> OpaquePointer in
            var cursor = buffer.baseAddress
            guard let x509 = d2i_X509(nil, &cursor, buffer.count) else {
                throw OpenSSLError(.invalidDER, "reading a DER certificate")
            }
            var used = 0
            if let start = buffer.baseAddress, let end = cursor { used = start.distance(to: end) }
            guard used == buffer.count else {
                X509_free(x509)
                throw OpenSSLError(
                    .invalidDER,
                    exactly: "\(buffer.count - used) trailing bytes after a DER certificate"
                )
            }
            return x509
        }
        try self.init(taking: x509)
    }

    /// Parses every certificate in a PEM bundle, in order.
    ///
    /// - Parameter pem: text with one or more `CERTIFICATE` blocks; blocks of other types are skipped.
    /// - Returns: at least one certificate.
    /// - Throws: ``OpenSSLError/invalidPEM`` when a block is damaged or there is no certificate at all.
    public static func bundle(pem: String) throws -> [Certificate] {
        try MemoryBIO.withReading(Array(pem.utf8)) { try readAll(from: $0, source: "PEM bundle") }
    }

    /// Reads every certificate in a PEM file, in order.
    ///
    /// - Parameter path: the file, such as `/etc/ssl/certs/ca-certificates.crt`.
    /// - Throws: ``OpenSSLError/io`` when the file cannot be opened, ``OpenSSLError/invalidPEM`` as ``bundle(pem:)``.
    public static func bundle(pemFile path: String) throws -> [Certificate] {
        tg_ERR_clear_error()
        guard let bio = BIO_new_file(path, "r") else {
            throw OpenSSLError(.io, "opening \(path)")
        }
        defer { BIO_free(bio) }
        return try readAll(from: bio, source: path)
    }

    private static func readAll(from bio: OpaquePointer, source: String) throws -> [Certificate] {
        tg_ERR_clear_error()
        var certificates: [Certificate] = []
        while let x509 = PEM_read_bio_X509(bio, nil, noPassphrase, nil) {
            certificates.append(try Certificate(taking: x509))
        }
        // The loop ends with "no start line" when the input is used up; anything else is damage.
        if !OpenSSLDecoding.pemInputEnded || certificates.isEmpty {
            let what =
                certificates.isEmpty
                ? "no certificate in \(source)" : "certificate #\(certificates.count + 1) in \(source)"
            throw OpenSSLError(.invalidPEM, what)
        }
        tg_ERR_clear_error()
        return certificates
    }

    /// The PEM encoding (`-----BEGIN CERTIFICATE-----`, base64 in 64-character lines, a final newline).
    public var pemString: String {
        let base64 = Data(self.derBytes).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n"
    }

    /// The subject as a one-line RFC 2253 string, most specific first: `CN=example.com,O=Example`.
    ///
    /// Non-ASCII characters are kept as UTF-8 rather than escaped.
    public var subject: String { Certificate.oneLine(X509_get_subject_name(self.x509)) }

    /// The issuer as a one-line RFC 2253 string, like ``subject``.
    public var issuer: String { Certificate.oneLine(X509_get_issuer_name(self.x509)) }

    /// The serial number in upper-case hexadecimal without leading zeros, as `openssl x509 -serial` shows it.
    public var serialNumber: String {
        guard let bignum = ASN1_INTEGER_to_BN(X509_get0_serialNumber(self.x509), nil) else { return "" }
        defer { BN_free(bignum) }
        guard let hex = BN_bn2hex(bignum) else { return "" }
        defer { tg_OPENSSL_free(hex) }
        return String(cString: hex)
    }

    /// Whether the TLS Feature extension (RFC 7633) lists `status_request` (5): "OCSP must-staple",
    /// a certificate its holder promised to present with a stapled OCSP response.
    public var mustStaple: Bool {
        let index = X509_get_ext_by_NID(self.x509, NID_tlsfeature, -1)
        guard index >= 0, let ext = X509_get_ext(self.x509, index), let data = X509_EXTENSION_get_data(ext),
            let bytes = ASN1_STRING_get0_data(data)
        else { return false }
        // A SEQUENCE of small INTEGERs: 30 LEN (02 01 VALUE)…
        let der = Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
        guard der.count >= 2, der[0] == 0x30 else { return false }
        var at = 2
        while at + 2 < der.count {
            guard der[at] == 0x02, der[at + 1] == 1 else { return false }
            if der[at + 2] == 5 { return true }
            at += 3
        }
        return false
    }

    /// Whether basicConstraints says `CA:TRUE`.
    public var isCA: Bool {
        X509_get_extension_flags(self.x509) & UInt32(EXFLAG_CA) != 0
    }

    /// The DNS names and IP addresses in the subjectAltName extension, in order; other name types are left out.
    public var subjectAlternativeNames: [SubjectAlternativeName] {
        guard let raw = X509_get_ext_d2i(self.x509, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { tg_sk_GENERAL_NAME_pop_free(names) }
        var result: [SubjectAlternativeName] = []
        for index in 0..<tg_sk_GENERAL_NAME_num(names) {
            var type: Int32 = 0
            guard let name = tg_sk_GENERAL_NAME_value(names, index),
                let value = GENERAL_NAME_get0_value(name, &type)
            else { continue }
            let string = value.assumingMemoryBound(to: ASN1_STRING.self)
            let bytes = Array(
                UnsafeBufferPointer(start: ASN1_STRING_get0_data(string), count: Int(ASN1_STRING_length(string)))
            )
            switch type {
            case GEN_DNS:
                result.append(.dnsName(String(decoding: bytes, as: UTF8.self)))
            case GEN_IPADD:
                if let address = IPAddress.format(bytes) { result.append(.ipAddress(address)) }
            default:
                continue
            }
        }
        return result
    }

    /// An `X509_NAME` as a one-line RFC 2253 string with UTF-8 kept as is.
    static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, tg_XN_FLAG_RFC2253() & ~UInt(ASN1_STRFLGS_ESC_MSB))
        return MemoryBIO.string(of: bio)
    }

    private static func encode(_ x509: OpaquePointer) throws -> [UInt8] {
        try OpenSSLDecoding.der("a certificate") { i2d_X509(x509, $0) }
    }

    private static func spkiDER(_ x509: OpaquePointer) throws -> [UInt8] {
        guard let spki = X509_get_X509_PUBKEY(x509) else {
            throw OpenSSLError(.invalidDER, "reading a certificate's public key")
        }
        var pointer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_PUBKEY(spki, &pointer)
        guard length > 0, let pointer else {
            throw OpenSSLError(.invalidDER, "encoding a certificate's public key")
        }
        defer { tg_OPENSSL_free(pointer) }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
    }
}

extension Certificate: Hashable {
    /// Certificates are equal when their DER encodings are.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.derBytes == rhs.derBytes }

    /// Hashes the DER encoding.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.derBytes) }
}

extension Certificate: CustomStringConvertible {
    /// The subject, serial number and pin, for logs.
    public var description: String { "Certificate(\(self.subject), serial \(self.serialNumber), \(self.spkiPin))" }
}

extension Certificate {
    /// Whether the certificate is its own issuer and its own key verifies its signature (a root, or a
    /// self-signed leaf).
    public var isSelfSigned: Bool { X509_self_signed(self.x509, 1) == 1 }

    /// Throws unless `key` is the private half of this certificate's public key.
    func requireMatch(_ key: PrivateKey) throws {
        tg_ERR_clear_error()
        guard X509_check_private_key(self.x509, key.pkey) == 1 else {
            throw OpenSSLError(
                .invalidArgument,
                exactly: "the private key does not match the certificate \(self.subject)"
            )
        }
    }
}
