internal import COpenSSL
import Foundation

/// An OCSP response (RFC 6960, DER) about one certificate, as a TLS server staples it to its
/// handshake (the `status_request` extension; nginx's `ssl_stapling_file`, HAProxy's `.ocsp`
/// file): the client learns that the certificate is not revoked without asking the CA itself.
///
/// Read from the DER an OCSP responder answers (`openssl ocsp -respout`), checked to be a
/// successful response holding a status for the certificate it is given for: its CertID matched
/// exactly when the chain holds the issuer (built from the issuer's name and key as clients
/// build it), else by serial number. Its signature is the client's to verify (the CA's key, or a
/// responder certificate it delegated to). Stapled only while current (before `nextUpdate`).
public struct OCSPResponse: Hashable, Sendable {
    /// What the response says of the certificate.
    public enum CertificateStatus: String, Hashable, Sendable {
        case good, revoked, unknown
    }

    /// Why bytes are not a usable OCSP response for a certificate.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The response as the responder encoded it: what is stapled.
    public let der: [UInt8]
    /// The certificate's status.
    public let status: CertificateStatus
    /// When the responder last knew the status to be correct.
    public let thisUpdate: Date
    /// When newer information will be available; the response is not stapled after it. Nil: the
    /// responder gave none (always current).
    public let nextUpdate: Date?

    /// Parses `der` and takes its status for `chain`'s leaf (`chain[1]`, when present, its issuer).
    /// - Throws: ``ParseError`` when it is not a successful OCSP response about that certificate.
    public init(der: [UInt8], for chain: [Certificate]) throws {
        try self.init(der: der, for: chain, verifying: false)
    }

    /// Parses `der` for `chain`'s leaf as a client may rely on it: also signed by `chain[1]`, the
    /// issuer (or by a responder certificate it issued for OCSP signing: `OCSP_basic_verify`, the
    /// issuer the trust anchor), and current. What a server staples once fetched, and what a
    /// client accepts of a server's staple.
    /// - Throws: ``ParseError`` saying why it cannot be relied on.
    public init(verifying der: [UInt8], for chain: [Certificate]) throws {
        guard chain.count > 1 else { throw ParseError(description: "no issuer to check the OCSP response's signature with") }
        try self.init(der: der, for: chain, verifying: true)
        guard isCurrent() else { throw ParseError(description: "its nextUpdate has passed") }
    }

    private init(der: [UInt8], for chain: [Certificate], verifying: Bool) throws {
        guard let leaf = chain.first else { throw ParseError(description: "no certificate to match the OCSP response to") }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let response = parsed else { throw ParseError(description: "not a DER OCSP response") }
        defer { OCSP_RESPONSE_free(response) }
        let responseStatus = OCSP_response_status(response)
        guard responseStatus == tg_OCSP_RESPONSE_STATUS_SUCCESSFUL() else {
            let text = OCSP_response_status_str(Int(responseStatus)).map { String(cString: $0) } ?? "\(responseStatus)"
            throw ParseError(description: "the OCSP responder answered \(text), not successful")
        }
        guard let basic = OCSP_response_get1_basic(response) else { throw ParseError(description: "the OCSP response has no basic response") }
        defer { OCSP_BASICRESP_free(basic) }
        if verifying { try Self.verifySignature(of: basic, issuer: chain[1]) }
        guard let index = Self.index(of: leaf, issuer: chain.dropFirst().first, in: basic) else {
            throw ParseError(description: "the OCSP response is about another certificate (none of its statuses is for serial \(leaf.serialNumber))")
        }
        let single = OCSP_resp_get0(basic, index)
        var reason: Int32 = 0
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        let status = OCSP_single_get0_status(single, &reason, &revokedAt, &thisUpdate, &nextUpdate)
        self.status = status == tg_V_OCSP_CERTSTATUS_GOOD() ? .good : status == tg_V_OCSP_CERTSTATUS_REVOKED() ? .revoked : .unknown
        do {
            self.thisUpdate = try OpenSSLDecoding.date(UnsafePointer(thisUpdate), "the OCSP response's thisUpdate")
            self.nextUpdate = try nextUpdate.map { try OpenSSLDecoding.date(UnsafePointer($0), "the OCSP response's nextUpdate") }
        } catch {
            throw ParseError(description: "\(error)")
        }
        self.der = der
    }

    /// Reads the DER response in the file at `path` for `chain`'s leaf.
    /// - Throws: ``ParseError`` naming the file.
    public init(contentsOf path: String, for chain: [Certificate]) throws {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ParseError(description: "cannot read the OCSP response \(path): \(error.localizedDescription)")
        }
        do {
            try self.init(der: bytes, for: chain)
        } catch let error as ParseError {
            throw ParseError(description: "\(path): \(error.description)")
        }
    }

    /// Whether it may be stapled at `date`: its `nextUpdate` has not passed.
    public func isCurrent(at date: Date = Date()) -> Bool {
        nextUpdate.map { date < $0 } ?? true
    }

    /// The index of the single response about `leaf`: by the CertID clients build when the issuer
    /// is known, else by serial number.
    private static func index(of leaf: Certificate, issuer: Certificate?, in basic: OpaquePointer) -> Int32? {
        if let issuer {
            guard let id = OCSP_cert_to_id(nil, leaf.x509, issuer.x509) else { return nil }
            defer { OCSP_CERTID_free(id) }
            let found = OCSP_resp_find(basic, id, -1)
            return found >= 0 ? found : nil
        }
        let serial = X509_get0_serialNumber(leaf.x509)
        for index in 0..<OCSP_resp_count(basic) {
            var candidate: UnsafeMutablePointer<ASN1_INTEGER>?
            guard let single = OCSP_resp_get0(basic, index),
                OCSP_id_get0_info(nil, nil, nil, &candidate, OCSP_SINGLERESP_get0_id(single)) == 1,
                let candidate, ASN1_INTEGER_cmp(candidate, serial) == 0
            else { continue }
            return index
        }
        return nil
    }
}
