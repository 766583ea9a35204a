/// What the cache did for one task, in the terms of the `Cache-Status` field (RFC 9211).
public struct CacheOutcome: Sendable, Hashable, CustomStringConvertible {
    /// Whether the response was served from the cache, and if not, why it went forward.
    public enum Result: String, Sendable, Hashable {
        /// Served from the cache without contacting the origin.
        case hit
        /// Nothing was stored for the URL.
        case uriMiss = "uri-miss"
        /// Something was stored for the URL, but no variant for this request's Vary'd fields.
        case varyMiss = "vary-miss"
        /// A stored response was stale and was validated with the origin.
        case stale
        /// The request asked for a fresh response (reload, no-cache).
        case request
        /// The request method's semantics require forwarding.
        case method
        /// The cache was not used for this request (no cache, or not a cacheable URL).
        case bypass
        /// Part of the response was stored; the cache asked the origin for the rest (RFC 9211 `fwd=partial`).
        case partial
    }

    /// The result.
    public var result: Result
    /// The status the origin answered a forwarded request with (e.g. 304 after validation).
    public var forwardStatus: Int?
    /// Whether the response was stored.
    public var stored = false
    /// Why it was not stored, or what was changed (`no-store`, `private`, `size-limit`, `truncated` …).
    public var detail: String?
    /// The stored response was served stale (accepted stale, stale-while-revalidate, stale-if-error).
    public var servedStale = false

    /// Creates an outcome.
    public init(result: Result, forwardStatus: Int? = nil, stored: Bool = false, detail: String? = nil) {
        self.result = result
        self.forwardStatus = forwardStatus
        self.stored = stored
        self.detail = detail
    }

    /// The ``detail`` of a request that could not go forward (`only-if-cached`, offline) and found
    /// nothing usable stored.
    public static let notStoredDetail = "not-stored"

    /// Nothing came from storage and nothing went forward (an `only-if-cached` or offline request
    /// answered 504). Cache-Status says `hit; detail="not-stored"`, as RFC 9211 has no `fwd`
    /// reason for a request that was not forwarded; logs and metrics count it a miss, as Squid
    /// logs `TCP_MISS/504`.
    public var isUnansweredMiss: Bool { result == .hit && detail == Self.notStoredDetail }

    /// Whether the response came from storage.
    public var isHit: Bool {
        (result == .hit && !isUnansweredMiss) || (result == .stale && forwardStatus == 304) || servedStale
    }

    /// The `Cache-Status` member for a cache named `cacheName`, e.g. `tollgate; fwd=uri-miss; stored`.
    public func cacheStatus(cacheName: String = "tollgate") -> String {
        // The common answer for a hit, without building a list of parts.
        if result == .hit, !stored, !servedStale, detail == nil { return cacheName + "; hit" }
        // One string grown in place (this is built for every response).
        var text = cacheName
        text.reserveCapacity(cacheName.utf8.count + 48 + (detail?.utf8.count ?? 0))
        if result == .hit {
            text += "; hit"
        } else {
            text += "; fwd="
            text += result.rawValue
            if let forwardStatus {
                text += "; fwd-status="
                text += String(forwardStatus)
            }
        }
        if stored { text += "; stored" }
        if servedStale || detail != nil {
            text += "; detail=\""
            if servedStale { text += detail == nil ? "stale" : "stale," }
            if let detail { text += detail }
            text += "\""
        }
        return text
    }

    public var description: String { cacheStatus() }
}
