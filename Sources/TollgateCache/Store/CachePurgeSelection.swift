import TollgateHTTP

/// What a purge takes (``CacheStore/purge(_:soft:)``): the admin API's, `tollgate cache purge`'s
/// and a client's `PURGE`.
public enum CachePurgeSelection: Sendable, Hashable {
    /// Every variant of a URL, as written (the store's key normalization is applied).
    case url(String)
    /// Every URL whose stored key starts with a prefix (``CacheStore/urlPrefix(_:)``'s form).
    case prefix(String)
    /// Every response whose stored `field` names one of the tags (``CacheTags``).
    case tags(Set<String>, field: String)
}

extension CachePurgeSelection {
    /// What a purge of `target` takes: for `URL*` every URL under the prefix (nil when no path
    /// comes before the `*`), else the URL as `keyURL` (the rule's `cache.key`) stores it.
    public static func target(_ target: String, keyURL: (HTTPURL) -> HTTPURL) -> CachePurgeSelection? {
        if target.hasSuffix("*") {
            return CacheStore.urlPrefix(String(target.dropLast())).map(CachePurgeSelection.prefix)
        }
        return .url(HTTPURL(string: target).map { keyURL($0).absoluteString } ?? target)
    }

    /// Every response tagged with one of the tags in `values` (each separated as the field
    /// separates them) in `field`.
    public static func tags(in values: [String], field: String) -> CachePurgeSelection {
        .tags(Set(values.flatMap { CacheTags.tags(in: Substring($0)) }.map(String.init)), field: field)
    }

    /// What a purge answers, one line: `purged N`, or `marked stale N` for a soft purge.
    public static func answer(_ count: Int, soft: Bool) -> String {
        soft ? "marked stale \(count)\n" : "purged \(count)\n"
    }
}
