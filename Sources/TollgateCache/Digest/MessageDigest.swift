import COpenSSL

/// A message digest computed incrementally by OpenSSL's EVP interface — the crypto library the
/// user chose for all digest work — with value semantics: a copy taken mid-stream goes on on its
/// own (the context is duplicated on the first update after a copy).
///
/// Every call that hands the context's pointer to OpenSSL holds its owner alive explicitly
/// (`withExtendedLifetime`): this module is built without lexical lifetimes in release.
public struct MessageDigest: Sendable {
    /// The algorithms Tollgate uses.
    public enum Algorithm: Sendable {
        /// SHA-256: stored bodies, the manifest, HTTP Digest `SHA-256`.
        case sha256
        /// MD5: HTTP Digest `MD5` only — never where collision resistance matters.
        case md5
        /// SHA-1: the WebSocket handshake's `Sec-WebSocket-Accept` (RFC 6455 §4.2.2), and the
        /// oldest lockfiles' integrity.
        case sha1
        /// SHA-384 and SHA-512: lockfiles' Subresource Integrity (`sha512-BASE64`).
        case sha384, sha512

        fileprivate var evp: OpaquePointer? {
            switch self {
            case .sha256: EVP_sha256()
            case .md5: EVP_md5()
            case .sha1: EVP_sha1()
            case .sha384: EVP_sha384()
            case .sha512: EVP_sha512()
            }
        }

        /// The digest's length in bytes.
        public var digestCount: Int {
            switch self {
            case .sha256: 32
            case .md5: 16
            case .sha1: 20
            case .sha384: 48
            case .sha512: 64
            }
        }
    }

    /// Owns one `EVP_MD_CTX`.
    private final class Context: @unchecked Sendable {
        // @unchecked: a Context is only used through the struct that owns it uniquely
        // (copy-on-write), never from two threads at once.
        let pointer: OpaquePointer

        init(_ algorithm: Algorithm) {
            // Allocation or initialization failing means OpenSSL itself is unusable.
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, algorithm.evp, nil) == 1 else {
                preconditionFailure("OpenSSL could not start a \(algorithm) digest")
            }
            pointer = context
        }

        init(copying other: Context) {
            let copied = withExtendedLifetime(other) { () -> OpaquePointer? in
                guard let context = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(context, other.pointer) == 1 else { return nil }
                return context
            }
            guard let copied else { preconditionFailure("OpenSSL could not copy a digest context") }
            pointer = copied
        }

        deinit { EVP_MD_CTX_free(pointer) }
    }

    /// The algorithm.
    public let algorithm: Algorithm
    private var context: Context

    /// Starts a digest.
    public init(_ algorithm: Algorithm) {
        self.algorithm = algorithm
        self.context = Context(algorithm)
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        let context = self.context
        withExtendedLifetime(context) { _ = EVP_DigestUpdate(context.pointer, bytes.baseAddress, bytes.count) }
    }

    /// Adds bytes.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let handled: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if handled == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The digest of everything added; the value itself is left as it was (more may be added).
    public func finalize() -> [UInt8] {
        let copy = Context(copying: context)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // TollgateCache is built without lexical lifetimes in release: `copy` would otherwise be
        // freed (its context with it) right after its pointer is read, before OpenSSL uses it.
        let finished = withExtendedLifetime(copy) { EVP_DigestFinal_ex(copy.pointer, &digest, &length) }
        guard finished == 1 else { preconditionFailure("OpenSSL could not finish a \(algorithm) digest") }
        return Array(digest.prefix(Int(length)))
    }

    /// The digest of `bytes`.
    public static func hash<Bytes: Sequence>(_ algorithm: Algorithm, _ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var digest = MessageDigest(algorithm)
        digest.update(bytes)
        return digest.finalize()
    }
}
