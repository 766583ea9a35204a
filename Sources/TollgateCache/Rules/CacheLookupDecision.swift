/// What to do with a request given what is stored: the result of
/// ``CacheRules/decide(request:policy:stored:now:)``, in the model of OkHttp's
/// `CacheStrategy` (network request and/or cache response) but as an explicit enum.
///
/// Not named `CacheDecision`: `TollgateSession` already has a `CacheDecision` (the
/// `willCacheResponse` answer), and a module importing both would find the name ambiguous.
public enum CacheLookupDecision: Sendable, Hashable {
    /// Serve the stored response without contacting the origin: it is fresh enough for
    /// the request (Cache-Status `hit`).
    case fresh(CacheHit)
    /// Serve the stored response although it is stale, because the request accepts it
    /// (`max-stale`) or its cache policy takes any stored response (`return-cache-*`).
    case staleAcceptable(CacheHit)
    /// Serve the stale stored response now and revalidate it in the background
    /// (`stale-while-revalidate`, RFC 5861 §3).
    case staleWhileRevalidate(CacheHit, Revalidation)
    /// Ask the origin first: send the request with ``Revalidation/conditionalHeaders``; a 304
    /// means serve the stored response updated by `merge304`, anything else replaces it.
    case revalidate(Revalidation)
    /// Go to the network as if nothing were stored.
    case miss(MissReason)
    /// Nothing usable is stored and the request may not go to the network: answer 504
    /// (`only-if-cached`, §5.2.1.7) or fail the task (`return-cache-dont-load`).
    case unavailable(UnavailableReason)

    /// Why the network is used without a stored response.
    public enum MissReason: String, Sendable, Hashable {
        /// Nothing stored under the key.
        case notStored = "not-stored"
        /// Stored variants exist, none for this request's Vary'd fields.
        case varyMismatch = "vary-mismatch"
        /// The request's method is not answered from the cache.
        case method = "method"
        /// The cache policy is `reload`.
        case reload = "reload"
    }

    /// Why nothing can be served.
    public enum UnavailableReason: String, Sendable, Hashable {
        /// The request said `only-if-cached`.
        case onlyIfCached = "only-if-cached"
        /// The cache policy is `return-cache-dont-load`.
        case offline = "offline"
    }

    /// The stored response to serve at once, if the decision serves one.
    public var hit: CacheHit? {
        switch self {
        case .fresh(let hit), .staleAcceptable(let hit), .staleWhileRevalidate(let hit, _): hit
        case .revalidate, .miss, .unavailable: nil
        }
    }
}
