public import Foundation

/// The figures `/cache/stats` and `tollgate cache stats` show.
public struct CacheStatistics: Sendable, Hashable {
    /// Stored variants.
    public var entries: Int
    /// Distinct keys (URLs) with at least one variant.
    public var urls: Int
    /// Bytes charged against the capacity: records (metadata and inline bodies) plus body files.
    public var bytes: Int64
    /// The capacity in bytes.
    public var capacity: Int64
    /// Lookups that found a variant, since the store was created.
    public var hits: UInt64
    /// Lookups that found none.
    public var misses: UInt64
    /// Variants evicted (least recently used first) to stay under the capacity, since the store
    /// was opened in this process.
    public var evictions: UInt64 = 0
}

/// One line of `tollgate cache list`.
public struct CacheListing: Sendable, Hashable {
    /// The variant's id.
    public var id: CacheEntryID
    /// The request URL as stored.
    public var url: String
    /// The response status.
    public var status: Int
    /// The body length in bytes.
    public var size: Int64
    /// When it was stored.
    public var storedAt: Date
}
