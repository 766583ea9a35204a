extension HostRule {
    /// A rule's cache settings (`cache`): the policy delegate's `willCacheResponse` answer and the
    /// cache key normalization. They act after the RFC 9111 rules, never instead of them: a
    /// response the HTTP rules refuse to store is not stored whatever `store` says.
    public struct CacheOverride: Hashable, Sendable {
        /// The `willCacheResponse` answer.
        public enum Store: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Store what the HTTP caching rules allow (`allow`).
            case allow
            /// Store nothing from these hosts (`deny`).
            case deny

            public var description: String { rawValue }
        }

        /// Keep or drop the proposed response (`store`). Default: allow.
        public var store: Store = .allow
        /// Treat a stored response as fresh for this long from when it was received, whatever its
        /// own freshness (`force-ttl`). Default: nil, the response's own.
        public var forceTTL: Duration?
        /// Serve a stored response up to this stale when revalidating it meets an error (the
        /// origin unreachable, or a 500, 502, 503 or 504), as if it said `stale-if-error`
        /// (`stale-if-error`); `must-revalidate`, `no-cache` and `proxy-revalidate` still forbid
        /// it. Default: nil, only the response's own `stale-if-error`.
        public var staleIfError: Duration?
        /// How the URL is rewritten into the cache key (`key`). Default: unchanged.
        public var key = CacheKeyNormalization()

        /// A cache setting with every field at its default.
        public init() {}
    }
}
