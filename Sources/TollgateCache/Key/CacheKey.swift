public import TollgateHTTP

/// What a stored response is filed under: the method and the normalized target URL
/// (RFC 9111 §2). Vary'd request headers select among the variants filed under one key.
///
/// Only GET responses are stored, so every key's method is GET; a HEAD request looks up the
/// GET key (a stored GET response answers a HEAD with its head alone, §4.3.5 in reverse).
/// The URL is normalized so that spellings of one URL share an entry: scheme and host
/// lowercased, the scheme's default port dropped, no fragment. Path and query are kept
/// byte for byte unless a ``CacheKeyNormalizer`` says otherwise.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The method responses under this key answered (always GET today).
    public let method: HTTPMethod
    /// The normalized absolute URL.
    public let url: String

    /// The key for a request, or nil when its method's responses are never stored
    /// (anything but GET and HEAD).
    /// - Parameters:
    ///   - request: the request as the client sent it.
    ///   - normalizer: the query rewriting the policy layer chose (none by default).
    public init?(request: HTTPRequestHead, normalizer: CacheKeyNormalizer = .standard) {
        guard request.method == .get || request.method == .head else { return nil }
        self.init(url: request.url, normalizer: normalizer)
    }

    /// The GET key for a URL.
    public init(url: HTTPURL, normalizer: CacheKeyNormalizer = .standard) {
        self.method = .get
        // HTTPURL has already lowercased scheme and host and dropped the fragment; its absolute
        // form leaves the port out when it is the scheme's default. One allocation for the text.
        self.url = url.absoluteString(pathAndQuery: normalizer.normalize(pathAndQuery: url.pathAndQuery))
    }

    /// A key from its parts as stored (no normalization applied).
    init(method: HTTPMethod, normalizedURL: String) {
        self.method = method
        self.url = normalizedURL
    }

    /// `GET https://example.com/a?b`, the text the key is stored under.
    public var description: String { "\(method.rawValue) \(url)" }

    /// The LMDB key: the text itself when it fits comfortably in LMDB's 511-byte key limit,
    /// otherwise `#` and the hex SHA-256 of the text (no text key starts with `#`, since
    /// they start with the method). CacheKeyTests checks it is ``description``'s bytes.
    var storageKey: [UInt8] { withStorageKey { Array($0) } }

    /// Calls `body` with ``storageKey``'s bytes, the text built in a buffer on the stack (a lookup
    /// made an array of it each time).
    func withStorageKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var method = method.rawValue
        var url = url  // withUTF8 is mutating (it may make a string contiguous first)
        let count = method.utf8.count + 1 + url.utf8.count
        return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
            let methodCount = method.withUTF8 { bytes in
                buffer.copyMemory(from: UnsafeRawBufferPointer(bytes))
                return bytes.count
            }
            buffer[methodCount] = 0x20
            url.withUTF8 { bytes in
                UnsafeMutableRawBufferPointer(rebasing: buffer[(methodCount + 1)...]).copyMemory(from: UnsafeRawBufferPointer(bytes))
            }
            let text = UnsafeRawBufferPointer(buffer)
            guard count > Self.longestTextKey else { return try body(text) }
            return try (Array("#".utf8) + Array(SHA256.hex(SHA256.hash(text)).utf8)).withUnsafeBytes(body)
        }
    }

    /// The longest key stored as text.
    static let longestTextKey = 400

    /// Parses the text form back (`GET url`), or nil.
    init?(storedDescription: String) {
        guard let space = storedDescription.firstIndex(of: " ") else { return nil }
        self.init(
            method: HTTPMethod(String(storedDescription[..<space])),
            normalizedURL: String(storedDescription[storedDescription.index(after: space)...])
        )
    }
}
