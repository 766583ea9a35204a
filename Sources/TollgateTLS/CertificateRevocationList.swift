internal import COpenSSL
import Foundation

/// An X.509 certificate revocation list (CRL), parsed and held by OpenSSL: the serial numbers a CA
/// has revoked, signed by that CA.
///
/// A ``ChainVerifier`` (and so a ``TLSContext``) given CRLs checks every certificate of a chain
/// but its trust anchor against the CRL of the certificate's issuer, as nginx's `ssl_crl`, HAProxy's
/// `crl-file` and curl's `--crlfile` do: a revoked certificate fails with "certificate revoked", a
/// certificate whose issuer has no CRL among them fails with "unable to get certificate CRL", and a
/// CRL past its `nextUpdate` fails every chain it covers with "CRL has expired" — fail closed. A
/// CRL's signature is checked against its issuer when it is used.
///
/// Two lists are equal when their DER encodings are. `@unchecked Sendable`: the `X509_CRL` is never
/// modified after creation.
public final class CertificateRevocationList: @unchecked Sendable {
    /// The owned `X509_CRL*`; freed on deinit.
    let crl: OpaquePointer

    /// The DER encoding of the whole list.
    public let derBytes: [UInt8]

    /// The issuer as a one-line RFC 2253 string (`CN=Example CA,O=Example`).
    public let issuer: String

    /// When the list was issued (`thisUpdate`).
    public let thisUpdate: Date

    /// When the issuer promises the next list (`nextUpdate`); nil when the list names no date.
    public let nextUpdate: Date?

    /// How many certificates the list revokes.
    public let revokedCount: Int

    /// Takes ownership of one reference to `crl`; on error the reference is released.
    init(taking crl: OpaquePointer) throws {
        let der: [UInt8]
        let thisUpdate: Date
        let nextUpdate: Date?
        do {
            der = try Self.encode(crl)
            thisUpdate = try OpenSSLDecoding.date(X509_CRL_get0_lastUpdate(crl), "a CRL's thisUpdate")
            nextUpdate = try X509_CRL_get0_nextUpdate(crl).map { try OpenSSLDecoding.date($0, "a CRL's nextUpdate") }
        } catch {
            X509_CRL_free(crl)
            throw error
        }
        self.crl = crl
        self.derBytes = der
        self.issuer = Certificate.oneLine(X509_CRL_get_issuer(crl))
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
        // A list that revokes nothing has no stack at all (OpenSSL counts it -1).
        self.revokedCount = max(0, Int(tg_sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl))))
    }

    deinit {
        X509_CRL_free(self.crl)
    }

    /// Whether the list is past its `nextUpdate` at `date`: OpenSSL then fails every chain it covers.
    public func hasExpired(at date: Date = Date()) -> Bool {
        guard let nextUpdate else { return false }
        return nextUpdate < date
    }

    /// Every CRL in a file: PEM (`-----BEGIN X509 CRL-----` blocks, any number, other blocks
    /// skipped) or one DER-encoded list (as CAs publish them at their distribution points).
    ///
    /// - Throws: ``OpenSSLError/io`` when the file cannot be read, ``OpenSSLError/invalidPEM`` when
    ///   it holds no CRL or a damaged one, ``OpenSSLError/invalidDER`` for a damaged DER list.
    public static func lists(inFile path: String) throws -> [CertificateRevocationList] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OpenSSLError(.io, exactly: "cannot read \(path)")
        }
        let bytes = [UInt8](data)
        // A DER list starts with a SEQUENCE (0x30); PEM is text.
        if bytes.first == 0x30 { return [try Self(der: bytes, source: path)] }
        return try lists(pemBytes: bytes, source: path)
    }

    /// Every CRL in PEM text.
    ///
    /// - Throws: ``OpenSSLError/invalidPEM`` when the text holds no CRL or a damaged one.
    public static func lists(pem: String) throws -> [CertificateRevocationList] {
        try lists(pemBytes: Array(pem.utf8), source: "PEM text")
    }

    /// Parses one DER-encoded list.
    ///
    /// - Throws: ``OpenSSLError/invalidDER``.
    public convenience init(der: [UInt8], source: String = "DER bytes") throws {
        tg_ERR_clear_error()
        let crl = try der.withUnsafeBufferPointer { buffer -> OpaquePointer in
            var cursor = buffer.baseAddress
            guard let crl = d2i_X509_CRL(nil, &cursor, buffer.count) else {
                throw OpenSSLError(.invalidDER, "reading a DER CRL from \(source)")
            }
            return crl
        }
        try self.init(taking: crl)
    }

    private static func lists(pemBytes: [UInt8], source: String) throws -> [CertificateRevocationList] {
        try MemoryBIO.withReading(pemBytes) { bio in
            tg_ERR_clear_error()
            var lists: [CertificateRevocationList] = []
            while let crl = PEM_read_bio_X509_CRL(bio, nil, nil, nil) {
                lists.append(try CertificateRevocationList(taking: crl))
            }
            // The loop ends with "no start line" when the input is used up; anything else is damage.
            if !OpenSSLDecoding.pemInputEnded || lists.isEmpty {
                let what = lists.isEmpty ? "no CRL in \(source)" : "CRL #\(lists.count + 1) in \(source)"
                throw OpenSSLError(.invalidPEM, what)
            }
            tg_ERR_clear_error()
            return lists
        }
    }

    private static func encode(_ crl: OpaquePointer) throws -> [UInt8] {
        try OpenSSLDecoding.der("a CRL") { i2d_X509_CRL(crl, $0) }
    }
}

extension CertificateRevocationList: Hashable {
    /// Lists are equal when their DER encodings are.
    public static func == (lhs: CertificateRevocationList, rhs: CertificateRevocationList) -> Bool {
        lhs.derBytes == rhs.derBytes
    }

    /// Hashes the DER encoding.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.derBytes) }
}

extension CertificateRevocationList: CustomStringConvertible {
    /// The issuer, how many it revokes and until when, for logs.
    public var description: String {
        let until = nextUpdate.map { "next update \($0)" } ?? "no next update"
        return "CRL(\(issuer), \(revokedCount) revoked, \(until))"
    }
}
