public import TollgateHTTP

/// How a rule rewrites a URL's query before it becomes a cache key (`hosts[].cache.key`).
///
/// Two URLs with the same normalized form share one cache entry. That is the point (the same file
/// behind rotating signatures, or tracking parameters, cached once) and the risk: a parameter that
/// does change the response, once dropped, serves one user's response to another request. Only the
/// cache key changes; the request sent upstream keeps its full URL.
///
/// Applied in this order: ``ignoreQuery``, else ``dropQuery`` then ``sortQuery``.
public struct CacheKeyNormalization: Hashable, Sendable {
    /// Query parameter names removed from the key (`drop-query`), compared exactly as written in
    /// the URL (case-sensitive, not percent-decoded); a name ending in `*` drops every parameter
    /// starting with the rest (`utm_*`). Default: none.
    public var dropQuery: [String] = []
    /// Sort the remaining parameters by name, keeping the order of repeated names (`sort-query`).
    /// Default: false.
    public var sortQuery: Bool = false
    /// Drop the whole query (`ignore-query`). Default: false.
    public var ignoreQuery: Bool = false

    /// No normalization.
    public init() {}

    /// Creates a normalization.
    public init(dropQuery: [String] = [], sortQuery: Bool = false, ignoreQuery: Bool = false) {
        self.dropQuery = dropQuery
        self.sortQuery = sortQuery
        self.ignoreQuery = ignoreQuery
    }

    /// Whether this leaves every URL unchanged.
    public var isIdentity: Bool { dropQuery.isEmpty && !sortQuery && !ignoreQuery }

    /// The URL whose query is rewritten as configured: the cache key's URL.
    public func normalize(_ url: HTTPURL) -> HTTPURL {
        guard !isIdentity, let query = url.query else { return url }
        var normalized = url
        if ignoreQuery {
            normalized.pathAndQuery = url.path
            return normalized
        }
        var parameters = query.split(separator: "&", omittingEmptySubsequences: true)
        if !dropQuery.isEmpty {
            parameters.removeAll { parameter in
                let name = parameter.prefix { $0 != "=" }
                return dropQuery.contains { drop in
                    drop.hasSuffix("*") ? name.hasPrefix(drop.dropLast()) : name == drop
                }
            }
        }
        if sortQuery {
            // Stable: repeated names keep their order, which some origins give meaning to.
            parameters = parameters.enumerated().sorted { lhs, rhs in
                let (left, right) = (lhs.element.prefix { $0 != "=" }, rhs.element.prefix { $0 != "=" })
                return left == right ? lhs.offset < rhs.offset : left < right
            }.map(\.element)
        }
        normalized.pathAndQuery = parameters.isEmpty ? url.path : url.path + "?" + parameters.joined(separator: "&")
        return normalized
    }
}
