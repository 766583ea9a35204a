import TollgateCache

/// MD5 (RFC 1321) from OpenSSL, for HTTP Digest authentication's `algorithm=MD5` only — never
/// for anything that needs collision resistance.
enum MD5 {
    /// The digest of `bytes`.
    static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        MessageDigest.hash(.md5, bytes)
    }
}
