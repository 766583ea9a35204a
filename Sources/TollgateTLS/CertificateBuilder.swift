internal import COpenSSL
import Foundation

/// Assembles and signs one X.509 v3 certificate; ``CertificateAuthority`` decides what goes in it.
struct CertificateBuilder {
    /// The subject's common name; nil leaves the subject empty (the SAN is then marked critical).
    var commonName: String?
    /// The key whose public half the certificate certifies.
    var subjectKey: PrivateKey
    var notBefore: Date
    var notAfter: Date
    /// Extensions in `openssl.cnf` syntax, added in order (only constant strings: never user input).
    var extensions: [(nid: Int32, value: String)] = []
    /// The subjectAltName entries; user input goes here, built as structures and never as config text.
    var alternativeNames: [SubjectAlternativeName] = []

    /// Signs with `issuer`'s key under `issuer`'s subject name, or self-signs when `issuer` is nil.
    func build(issuer: (certificate: Certificate, key: PrivateKey)?) throws -> Certificate {
        tg_ERR_clear_error()
        guard let x509 = X509_new() else { throw OpenSSLError(.certificateCreation, "allocating a certificate") }
        defer { X509_free(x509) }

        guard X509_set_version(x509, tg_X509_VERSION_3()) == 1 else {
            throw OpenSSLError(.certificateCreation, "setting the certificate version")
        }
        try self.setRandomSerial(x509)
        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(self.notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(self.notAfter.timeIntervalSince1970)) != nil
        else {
            throw OpenSSLError(.certificateCreation, "setting the validity period")
        }
        try self.setSubject(x509)
        let issuerName = issuer.map { X509_get_subject_name($0.certificate.x509) } ?? X509_get_subject_name(x509)
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw OpenSSLError(.certificateCreation, "setting the issuer name")
        }
        guard X509_set_pubkey(x509, self.subjectKey.pkey) == 1 else {
            throw OpenSSLError(.certificateCreation, "setting the public key")
        }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate.x509 ?? x509, x509, nil, nil, 0)
        for (nid, value) in self.extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw OpenSSLError(
                    .certificateCreation,
                    "building extension \(String(cString: OBJ_nid2sn(nid))) = \(value)"
                )
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else {
                throw OpenSSLError(.certificateCreation, "adding extension \(String(cString: OBJ_nid2sn(nid)))")
            }
        }
        if !self.alternativeNames.isEmpty {
            try self.addAlternativeNames(x509, critical: self.commonName == nil)
        }

        let signer = issuer?.key ?? self.subjectKey
        guard X509_sign(x509, signer.pkey, EVP_sha256()) > 0 else {
            throw OpenSSLError(.signing, "signing a certificate with SHA-256")
        }
        return try Certificate(retaining: x509)
    }

    /// 16 random bytes, top bit clear (positive) and second bit set (no leading zero byte, so always 16 bytes).
    private func setRandomSerial(_ x509: OpaquePointer) throws {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
            throw OpenSSLError(.certificateCreation, "generating a random serial number")
        }
        bytes[0] = (bytes[0] & 0x7F) | 0x40
        guard let bignum = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw OpenSSLError(.certificateCreation, "converting the serial number")
        }
        defer { BN_free(bignum) }
        guard BN_to_ASN1_INTEGER(bignum, X509_get_serialNumber(x509)) != nil else {
            throw OpenSSLError(.certificateCreation, "setting the serial number")
        }
    }

    private func setSubject(_ x509: OpaquePointer) throws {
        guard let name = X509_NAME_new() else { throw OpenSSLError(.certificateCreation, "allocating a name") }
        defer { X509_NAME_free(name) }
        if let commonName = self.commonName {
            let utf8 = Array(commonName.utf8)
            guard X509_NAME_add_entry_by_txt(name, "CN", tg_MBSTRING_UTF8(), utf8, Int32(utf8.count), -1, 0) == 1
            else {
                throw OpenSSLError(.certificateCreation, "setting the common name")
            }
        }
        guard X509_set_subject_name(x509, name) == 1 else {
            throw OpenSSLError(.certificateCreation, "setting the subject name")
        }
    }

    private func addAlternativeNames(_ x509: OpaquePointer, critical: Bool) throws {
        guard let names = tg_sk_GENERAL_NAME_new_null() else {
            throw OpenSSLError(.certificateCreation, "allocating subjectAltName")
        }
        defer { tg_sk_GENERAL_NAME_pop_free(names) }
        for alternativeName in self.alternativeNames {
            let type: Int32
            let bytes: [UInt8]
            switch alternativeName {
            case .dnsName(let name):
                type = GEN_DNS
                bytes = Array(name.utf8)
            case .ipAddress(let address):
                type = GEN_IPADD
                guard let parsed = IPAddress.parse(address) else {
                    throw OpenSSLError(.invalidArgument, exactly: "\"\(address)\" is not an IP address")
                }
                bytes = parsed
            }
            guard let name = GENERAL_NAME_new() else {
                throw OpenSSLError(.certificateCreation, "allocating subjectAltName")
            }
            guard let value = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new() else {
                GENERAL_NAME_free(name)
                throw OpenSSLError(.certificateCreation, "allocating subjectAltName")
            }
            GENERAL_NAME_set0_value(name, type, value)  // `name` owns `value` from here on
            guard ASN1_STRING_set(value, bytes, Int32(bytes.count)) == 1, tg_sk_GENERAL_NAME_push(names, name) > 0
            else {
                GENERAL_NAME_free(name)
                throw OpenSSLError(.certificateCreation, "building subjectAltName")
            }
        }
        guard X509_add1_ext_i2d(x509, NID_subject_alt_name, UnsafeMutableRawPointer(names), critical ? 1 : 0, 0) == 1
        else {
            throw OpenSSLError(.certificateCreation, "adding subjectAltName")
        }
    }
}
