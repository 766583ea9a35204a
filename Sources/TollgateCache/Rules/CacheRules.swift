/// The RFC 9111 rules a cache applies, as pure functions of messages and a `now`: whether a
/// response may be stored (``storability(request:response:bodyLength:context:)``), whether a
/// stored one may answer a request (``decide(request:policy:stored:now:)``), validation,
/// 304 merging and invalidation.
///
/// A value so that the policy layer can hold one per configuration. By default the rules of
/// a *shared* cache (the design's default): `s-maxage` wins, `private` responses are not
/// stored, responses to requests with Authorization only when §3.5 allows. With
/// ``isShared`` false they are a private cache's (a single-user dev machine).
///
/// Shaped after OkHttp's `CacheStrategy`, adapted: shared-cache semantics, no `Warning`
/// fields (RFC 9111 obsoletes them), optionals instead of `-1` sentinels, and heuristic
/// freshness for URLs with a query too (RFC 7234 dropped RFC 2616's exclusion).
public struct CacheRules: Sendable, Hashable {
    /// Shared-cache rules (default true); false for a private cache.
    public var isShared: Bool
    /// The fraction of `Date − Last-Modified` taken as a heuristic freshness lifetime
    /// (default 0.1, RFC 9111 §4.2.2's suggestion).
    public var heuristicFraction: Double
    /// The longest heuristic lifetime, in seconds (default 86 400, one day).
    public var heuristicLimit: Double
    /// The largest body stored, as a fraction of the cache's capacity (default 0.05, the
    /// seeds' "not larger than 5 % of the disk cache").
    public var maximumBodyFraction: Double
    /// The targeted cache-control fields (RFC 9213) this cache honours, its own name first
    /// (default none: Cache-Control alone). See ``responseControl(_:)``.
    public var targetedFields: [String]
    /// Whether stored copies keep `Set-Cookie` (`cache.set-cookie: store`; default false: every
    /// stored copy is stripped of it, as Squid and ATS do). See ``StoredHeaders``.
    public var storesSetCookie: Bool
    /// When a Range request that misses is sent upstream without its Range, so that the whole
    /// response is fetched and stored and the range cut from it (Squid's `range_offset_limit`,
    /// `cache.range-offset-limit`): when the range starts before this many bytes. 0 (the
    /// default): never, the range goes upstream and the 206 is kept as partial content; nil
    /// (`none`): always.
    public var rangeOffsetLimit: Int64? = 0

    /// Whether a Range request starting at `start` (nil: a suffix) is fetched whole.
    public func fetchesWhole(rangeStart start: Int64?) -> Bool {
        guard let limit = rangeOffsetLimit else { return true }
        guard limit > 0, let start else { return false }
        return start < limit
    }

    /// Rules with the defaults above unless given.
    public init(
        isShared: Bool = true,
        heuristicFraction: Double = 0.1,
        heuristicLimit: Double = 86_400,
        maximumBodyFraction: Double = 0.05,
        targetedFields: [String] = [],
        storesSetCookie: Bool = false
    ) {
        self.targetedFields = targetedFields
        self.storesSetCookie = storesSetCookie
        self.isShared = isShared
        self.heuristicFraction = heuristicFraction
        self.heuristicLimit = heuristicLimit
        self.maximumBodyFraction = maximumBodyFraction
    }

    /// A shared cache's rules with the defaults.
    public static let shared = CacheRules()
    /// A private cache's rules with the defaults.
    public static let `private` = CacheRules(isShared: false)

    /// Statuses a cache may give a heuristic freshness lifetime (RFC 9110 §15.1): and so may
    /// store without explicit freshness. 206 is among them but never stored whole here.
    public static let heuristicallyCacheableStatuses: Set<Int> = [
        200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501,
    ]

    /// Statuses whose caching rules this cache implements (for `must-understand`, §5.2.2.3).
    public static let understoodStatuses: Set<Int> = heuristicallyCacheableStatuses.union([302, 303, 307])
}
