public import Foundation

/// How a ``CacheStore`` is opened.
public struct CacheStoreOptions: Sendable {
    /// The directory holding the LMDB environment and `bodies/` (the policy file's `cache.path`).
    public var path: String
    /// The capacity in bytes (`cache.max-size`; default 1 GiB): metadata and bodies stored
    /// above it are evicted, least recently used first.
    public var maxSize: Int64
    /// Bodies up to this many bytes are stored inside the LMDB record (default 64 KiB);
    /// larger ones in files of `bodies/`.
    public var inlineBodyLimit: Int
    /// The rules used to filter stored headers, merge 304s and size bodies (default `.shared`).
    public var rules: CacheRules
    /// How `remove(url:)` turns a URL into a key (default: no rewriting); use the one lookups use.
    public var keyNormalizer: CacheKeyNormalizer
    /// Hits are recorded in memory and written to the LRU index in batches: after this many
    /// distinct entries were hit (default 64) …
    public var accessBatchSize: Int
    /// … or this many seconds after the last batch (default 1), whichever comes first.
    public var accessFlushInterval: TimeInterval
    /// The initial LMDB map size in bytes (default 64 MiB; it grows on demand).
    public var mapSize: Int
    /// The wall clock (default `Date()`); tests inject their own.
    public var clock: @Sendable () -> Date
    /// The most variants (responses Vary selects between) kept for one key (default 16; the
    /// policy file's `cache.max-variants`): storing one more removes the key's least recently
    /// used.
    public var maximumVariantsPerKey: Int
    /// Opens an existing store without writing anything to it (default false): lookups serve
    /// what it holds, every write throws ``CacheStoreError/readOnly``, hits are counted in memory
    /// only. For a cache handed to a build as it was warmed (a read-only mount, a copy the build
    /// may not change). The store must not be written by another process meanwhile.
    public var readOnly: Bool

    /// Options with the defaults above unless given.
    public init(
        path: String,
        maxSize: Int64 = 1 << 30,
        inlineBodyLimit: Int = 64 << 10,
        rules: CacheRules = .shared,
        keyNormalizer: CacheKeyNormalizer = .standard,
        accessBatchSize: Int = 64,
        accessFlushInterval: TimeInterval = 1,
        mapSize: Int = 64 << 20,
        clock: @escaping @Sendable () -> Date = { Date() },
        maximumVariantsPerKey: Int = 16,
        readOnly: Bool = false
    ) {
        self.maximumVariantsPerKey = maximumVariantsPerKey
        self.path = path
        self.maxSize = maxSize
        self.inlineBodyLimit = inlineBodyLimit
        self.rules = rules
        self.keyNormalizer = keyNormalizer
        self.accessBatchSize = accessBatchSize
        self.accessFlushInterval = accessFlushInterval
        self.mapSize = mapSize
        self.clock = clock
        self.readOnly = readOnly
    }
}
