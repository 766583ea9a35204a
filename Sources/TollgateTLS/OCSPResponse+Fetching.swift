internal import COpenSSL
import Foundation

/// What a server needs to fetch the OCSP responses it staples from its CA's responder (nginx's
/// `ssl_stapling on`, HAProxy's `ocsp-update on`): where the responder is, the request, and the
/// check that an answer comes from the certificate's issuer (``init(verifying:for:)``).
extension OCSPResponse {
    /// The OCSP responder URLs a certificate names (its authorityInfoAccess `OCSP;URI:` entries).
    public static func responderURLs(of certificate: Certificate) -> [String] {
        guard let list = X509_get1_ocsp(certificate.x509) else { return [] }
        defer { X509_email_free(list) }
        return (0..<tg_sk_OPENSSL_STRING_num(list)).compactMap { tg_sk_OPENSSL_STRING_value(list, $0).map { String(cString: $0) } }
    }

    /// The DER OCSP request (RFC 6960 §4.1, no nonce: responders that pre-sign answer it, and a
    /// stapled response is shared by every client) asking about `chain`'s leaf, `chain[1]` its issuer.
    /// - Throws: ``ParseError`` when the chain has no issuer.
    public static func request(for chain: [Certificate]) throws -> [UInt8] {
        guard chain.count > 1 else {
            throw ParseError(description: "the certificate file holds no issuer after the leaf: an OCSP request names the issuer")
        }
        guard let request = OCSP_REQUEST_new() else { throw ParseError(description: "cannot make an OCSP request") }
        defer { OCSP_REQUEST_free(request) }
        guard let id = OCSP_cert_to_id(nil, chain[0].x509, chain[1].x509) else {
            throw ParseError(description: "cannot compute the certificate's OCSP ID")
        }
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw ParseError(description: "cannot make an OCSP request")
        }
        do {
            return try OpenSSLDecoding.der("an OCSP request") { i2d_OCSP_REQUEST(request, $0) }
        } catch {
            throw ParseError(description: "\(error)")
        }
    }

    /// Checks that `basic` is signed by `issuer` (the certificate's CA) or by a responder
    /// certificate it issued for OCSP signing (`OCSP_basic_verify`, the issuer the trust anchor).
    /// - Throws: ``ParseError`` saying why not.
    static func verifySignature(of basic: OpaquePointer, issuer: Certificate) throws {
        guard let store = X509_STORE_new() else { throw ParseError(description: "cannot make a certificate store") }
        defer { X509_STORE_free(store) }
        guard let certificates = tg_sk_X509_new_null() else { throw ParseError(description: "cannot make a certificate list") }
        defer { tg_sk_X509_free(certificates) }
        // The issuer is trusted as it is (an intermediate, not a root): a partial chain ends there.
        guard X509_STORE_add_cert(store, issuer.x509) == 1, X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN)) == 1,
            tg_sk_X509_push(certificates, issuer.x509) > 0
        else { throw ParseError(description: "cannot set up the OCSP signature check") }
        tg_ERR_clear_error()
        let verified = withExtendedLifetime(issuer) { OCSP_basic_verify(basic, certificates, store, 0) }
        guard verified == 1 else {
            let why = OpenSSLError.drainErrorQueue().joined(separator: "; ")
            throw ParseError(description: "the OCSP response's signature is not the issuer's (\(why.isEmpty ? "no reason given" : why))")
        }
    }
}
