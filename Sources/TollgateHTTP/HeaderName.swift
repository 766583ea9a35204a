/// A field name with its lookup key (``HeaderFields/Field/nameKey(of:)``) computed once.
///
/// ``HeaderFields`` finds a line by key first; a lookup by a `String` name hashes the name on
/// every call. The names the request and response paths ask for on every message are constants
/// of this type, so those lookups hash nothing (the hashing was ~2 % of a cache hit's CPU).
///
/// The text is a `StaticString`: a constant is passed and compared without a retain (a `String`
/// longer than fifteen bytes, such as `Transfer-Encoding`, was retained at every use).
public struct HeaderName: Hashable, Sendable, CustomStringConvertible {
    /// The name as written, from a literal (matching ignores ASCII case).
    public let staticText: StaticString
    /// ``HeaderFields/Field/nameKey(of:)`` of the text.
    public let key: UInt32

    /// A name and its key. Make constants of these, not one per lookup.
    public init(_ text: StaticString) {
        precondition(text.hasPointerRepresentation, "a header name is more than one character")
        self.staticText = text
        self.key = HeaderFields.Field.key(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The name's UTF-8 bytes (static: valid for the life of the process).
    @inline(__always)
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: staticText.utf8Start, count: staticText.utf8CodeUnitCount)
    }

    /// The name as a string.
    public var text: String { staticText.description }

    public var description: String { text }

    public static func == (lhs: HeaderName, rhs: HeaderName) -> Bool {
        lhs.key == rhs.key && HeaderFields.bytes(lhs.bytes, equalIgnoringASCIICase: rhs.bytes)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(key) }
}

extension HeaderName {
    public static let age = HeaderName("Age")
    public static let authorization = HeaderName("Authorization")
    public static let cacheControl = HeaderName("Cache-Control")
    public static let cacheStatus = HeaderName("Cache-Status")
    public static let connection = HeaderName("Connection")
    public static let contentEncoding = HeaderName("Content-Encoding")
    public static let contentLength = HeaderName("Content-Length")
    public static let contentLocation = HeaderName("Content-Location")
    public static let contentType = HeaderName("Content-Type")
    public static let cookie = HeaderName("Cookie")
    public static let date = HeaderName("Date")
    public static let eTag = HeaderName("ETag")
    public static let expect = HeaderName("Expect")
    public static let expires = HeaderName("Expires")
    public static let host = HeaderName("Host")
    public static let ifModifiedSince = HeaderName("If-Modified-Since")
    public static let ifNoneMatch = HeaderName("If-None-Match")
    public static let ifMatch = HeaderName("If-Match")
    public static let ifUnmodifiedSince = HeaderName("If-Unmodified-Since")
    public static let acceptRanges = HeaderName("Accept-Ranges")
    public static let keepAlive = HeaderName("Keep-Alive")
    public static let lastModified = HeaderName("Last-Modified")
    public static let location = HeaderName("Location")
    public static let pragma = HeaderName("Pragma")
    public static let proxyAuthorization = HeaderName("Proxy-Authorization")
    public static let referer = HeaderName("Referer")
    public static let proxyConnection = HeaderName("Proxy-Connection")
    public static let setCookie = HeaderName("Set-Cookie")
    public static let transferEncoding = HeaderName("Transfer-Encoding")
    public static let upgrade = HeaderName("Upgrade")
    public static let userAgent = HeaderName("User-Agent")
    public static let vary = HeaderName("Vary")
    public static let via = HeaderName("Via")
    public static let xForwardedFor = HeaderName("X-Forwarded-For")
    public static let xForwardedHost = HeaderName("X-Forwarded-Host")
    public static let xForwardedProto = HeaderName("X-Forwarded-Proto")
    public static let xForwardedPort = HeaderName("X-Forwarded-Port")
    public static let forwarded = HeaderName("Forwarded")
    public static let cdnLoop = HeaderName("CDN-Loop")
    /// RFC 9440: the client certificate a TLS-terminating proxy verified.
    public static let clientCert = HeaderName("Client-Cert")
    /// RFC 9440: the other certificates the client presented.
    public static let clientCertChain = HeaderName("Client-Cert-Chain")
}
