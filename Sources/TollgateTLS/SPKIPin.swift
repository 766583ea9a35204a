internal import COpenSSL
import Foundation

/// A public-key pin: the SHA-256 of a certificate's DER SubjectPublicKeyInfo, written `sha256/<base64>`.
///
/// This is the format OkHttp's `CertificatePinner` and HPKP use; `base64` is standard base64 with
/// padding, 44 characters for the 32-byte digest. A pin names a key, not a certificate, so it survives
/// re-issuing a certificate for the same key. Compute one from the command line with
///
/// ```
/// openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der \
///     | openssl dgst -sha256 -binary | base64
/// ```
///
/// SHA-1 pins (`sha1/`) are refused: SHA-1 is no longer collision resistant.
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The prefix every pin starts with.
    public static let prefix = "sha256/"

    /// The 32-byte SHA-256 digest of the SubjectPublicKeyInfo DER.
    public let sha256Digest: [UInt8]

    /// A pin from its 32-byte SHA-256 digest.
    ///
    /// - Throws: ``SPKIPin/ParseError/wrongLength`` when `sha256Digest` is not 32 bytes.
    public init(sha256Digest: [UInt8]) throws {
        guard sha256Digest.count == 32 else {
            throw ParseError(.wrongLength, "a SHA-256 digest is 32 bytes, not \(sha256Digest.count)")
        }
        self.sha256Digest = sha256Digest
    }

    /// The pin of a public key, hashing its DER SubjectPublicKeyInfo with OpenSSL.
    ///
    /// - Parameter spkiDER: the DER SubjectPublicKeyInfo (``Certificate/publicKeySPKIDER``).
    /// - Throws: ``OpenSSLError`` if OpenSSL cannot compute SHA-256.
    public init(spkiDER: [UInt8]) throws {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        tg_ERR_clear_error()
        let ok = spkiDER.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        guard ok == 1, length == 32 else {
            throw OpenSSLError(.invalidArgument, "computing SHA-256 of a public key")
        }
        self.sha256Digest = Array(digest.prefix(32))
    }

    /// Parses `sha256/<base64>`; surrounding whitespace is ignored.
    ///
    /// - Parameter string: the pin as written in a configuration file.
    /// - Throws: ``SPKIPin/ParseError``, whose message names the problem: a missing `sha256/` prefix, an
    ///   unsupported algorithm such as `sha1/`, text that is not standard base64, or a digest that is
    ///   not 32 bytes long.
    public init(_ string: String) throws {
        let pin = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard pin.hasPrefix(SPKIPin.prefix) else {
            if pin.lowercased().hasPrefix("sha1/") {
                throw ParseError(
                    .unsupportedAlgorithm,
                    "\"\(pin)\" is a sha1/ pin; SHA-1 pins are not supported, use the sha256/ pin of the same key"
                )
            }
            if pin.lowercased().hasPrefix(SPKIPin.prefix) {
                throw ParseError(.missingPrefix, "\"\(pin)\" must start with lower-case \"sha256/\"")
            }
            if let slash = pin.firstIndex(of: "/"), pin[..<slash].allSatisfy({ $0.isLetter || $0.isNumber }),
                !pin[..<slash].isEmpty
            {
                throw ParseError(
                    .unsupportedAlgorithm,
                    "\"\(pin)\" uses \"\(pin[...slash])\"; only sha256/ pins are supported"
                )
            }
            throw ParseError(.missingPrefix, "\"\(pin)\" is missing the \"sha256/\" prefix (expected sha256/<base64>)")
        }
        let base64 = pin.dropFirst(SPKIPin.prefix.count)
        if base64.isEmpty {
            throw ParseError(.invalidBase64, "\"\(pin)\" has nothing after \"sha256/\"")
        }
        if base64.contains("-") || base64.contains("_") {
            throw ParseError(
                .invalidBase64,
                "\"\(pin)\" looks like base64url ('-' or '_'); pins use standard base64 ('+' and '/')"
            )
        }
        guard let decoded = Data(base64Encoded: String(base64)) else {
            let hint =
                base64.count % 4 == 0
                ? "" : " (its length, \(base64.count), is not a multiple of 4: is the '=' padding missing?)"
            throw ParseError(.invalidBase64, "\"\(pin)\" is not valid standard base64 after \"sha256/\"\(hint)")
        }
        guard decoded.count == 32 else {
            throw ParseError(
                .wrongLength,
                "\"\(pin)\" decodes to \(decoded.count) bytes; a SHA-256 pin is 32 bytes (44 base64 characters)"
            )
        }
        self.sha256Digest = Array(decoded)
    }

    /// The canonical form, `sha256/` and the padded standard base64 of the digest.
    public var description: String { SPKIPin.prefix + Data(self.sha256Digest).base64EncodedString() }
}
