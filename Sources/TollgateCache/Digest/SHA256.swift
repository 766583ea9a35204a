/// SHA-256 (FIPS 180-4), computed incrementally by OpenSSL (``MessageDigest``).
///
/// The cache records the digest of every body it stores and `CacheStore.verify()` recomputes
/// it; the manifest of a warmed cache locks bodies by it.
public struct SHA256: Sendable {
    /// The length of a digest in bytes.
    public static let digestCount = 32

    private var digest = MessageDigest(.sha256)

    /// Starts a new digest.
    public init() {}

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
    }

    /// Adds bytes to the digest.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        digest.update(bytes)
    }

    /// The digest of everything added (the value itself is left unchanged).
    public func finalize() -> [UInt8] {
        digest.finalize()
    }

    /// The digest of `bytes`.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        MessageDigest.hash(.sha256, bytes)
    }

    /// Lowercase hexadecimal, as digests are shown.
    public static func hex<Bytes: Sequence>(_ digest: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
