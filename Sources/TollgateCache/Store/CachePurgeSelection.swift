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
    /// What a purge answers, one line: `purged N`, or `marked stale N` for a soft purge.
    public static func answer(_ count: Int, soft: Bool) -> String {
        soft ? "marked stale \(count)\n" : "purged \(count)\n"
    }
}
