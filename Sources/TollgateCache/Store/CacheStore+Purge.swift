import Foundation
import TollgateHTTP
import TollgateStore

/// Purges of many URLs at once: every URL under a prefix (`URL*`), every response carrying a
/// tag (`cache.tag-header`). Single URLs are removed by ``remove(key:)`` and ``remove(url:)``.
extension CacheStore {
    /// Removes every variant of every URL whose key starts with `prefix` (the purge of `URL*`),
    /// responses held in pieces included, in one transaction; returns how many variants. The
    /// prefix is matched against the stored keys' URLs, which are normalized (scheme and host
    /// lowercased, a default port dropped): ``urlPrefix(_:)`` brings a written prefix to that
    /// form. Blocking; reads every record.
    @discardableResult
    public func remove(urlPrefix prefix: String) throws -> Int {
        try purge(.prefix(prefix))
    }

    /// `text` (an absolute http(s) URL, a path or part of one after the host) in the form stored
    /// keys have, for ``remove(urlPrefix:)``: scheme and host lowercased, the default port dropped.
    /// Nil when `text` is not an absolute http(s) URL with at least `/` after its host.
    public static func urlPrefix(_ text: String) -> String? {
        guard let parsed = HTTPURL(string: text), parsed.scheme == "http" || parsed.scheme == "https" else { return nil }
        // Only the part up to the path is rewritten: the rest is a prefix as written.
        guard let schemeEnd = text.range(of: "://"), let pathStart = text[schemeEnd.upperBound...].firstIndex(of: "/") else {
            return nil
        }
        return parsed.absoluteString(pathAndQuery: "") + text[pathStart...]
    }

    /// Removes every stored response whose `field` (the origin's, as stored: `Surrogate-Key`,
    /// `Cache-Tag`, `xkey`) names one of `tags` (``CacheTags``), responses held in pieces
    /// included, in one transaction; returns how many variants — Fastly's purge by surrogate key,
    /// Varnish's `xkey.purge`. Other variants of the same URL stay. Blocking; reads every record.
    @discardableResult
    public func remove(taggedWith tags: Set<String>, in field: String) throws -> Int {
        try purge(.tags(tags, field: field))
    }

    /// Removes what `selection` takes (`soft`: marks it stale instead — Fastly's soft purge,
    /// Varnish's `xkey.softpurge`: each response is then revalidated before it is served fresh,
    /// and `stale-while-revalidate` or `stale-if-error` may still serve it meanwhile); returns how
    /// many variants. Pieces of ranged responses it takes are removed either way. Blocking.
    @discardableResult
    public func purge(_ selection: CachePurgeSelection, soft: Bool = false) throws -> Int {
        try checkWritable()
        let found: (ids: [UInt64], partialKeys: [CacheKey])
        switch selection {
        case .url(let url):
            // Removed by its key, which also clears an index row whose variants are gone.
            guard soft else { return try remove(url: url) }
            guard let parsed = HTTPURL(string: url), parsed.scheme == "http" || parsed.scheme == "https" else {
                throw CacheStoreError.invalidURL
            }
            let key = CacheKey(url: parsed, normalizer: options.keyNormalizer)
            found = (try environment.read { txn in try variantIDs(key, txn) }, [key])
        case .prefix(let prefix):
            guard !prefix.isEmpty else { return 0 }
            found = try matching { $0.key.url.hasPrefix(prefix) }
        case .tags(let tags, let field):
            guard !tags.isEmpty else { return 0 }
            found = try matching { CacheTags.field(field, in: $0.headerFields, namesAnyOf: tags) }
        }
        guard !found.ids.isEmpty || !found.partialKeys.isEmpty else { return 0 }
        let db = self.db
        let now = options.clock()
        var freed: [String] = []
        let count = try environment.write { txn -> Int in
            freed = []
            var count = 0
            for id in found.ids {
                if soft {
                    // Marked once: a later soft purge does not make it less stale.
                    let marked = try rewriteRecord(id, txn) { response in
                        var marked = response
                        marked.staleSince = min(response.staleSince ?? now, now)
                        return marked
                    }
                    if marked != nil { count += 1 }
                } else if try txn.contains(id, in: db.variants) {
                    // A variant removed meanwhile (evicted, replaced) is not counted.
                    if let file = try removeVariant(id, txn) { freed.append(file) }
                    count += 1
                }
            }
            for key in found.partialKeys {
                if let file = try dropPartialRecord(key, txn) { freed.append(file) }
            }
            return count
        }
        for name in freed { files.remove(name) }
        return count
    }

    /// The variants and the responses held in pieces whose stored response `matches`, from one
    /// read (no writer held while every record is decoded).
    private func matching(_ matches: (StoredResponse) -> Bool) throws -> (ids: [UInt64], partialKeys: [CacheKey]) {
        let db = self.db
        return try environment.read { txn -> ([UInt64], [CacheKey]) in
            var ids: [UInt64] = []
            try txn.withCursor(in: db.variants) { cursor in
                try cursor.forEach { entry in
                    if let (response, _) = StoredResponse.decode(record: entry.value), matches(response) {
                        ids.append(try entry.decodedKey(as: UInt64.self))
                    }
                    return true
                }
            }
            var partialKeys: [CacheKey] = []
            try txn.withCursor(in: db.partials) { cursor in
                try cursor.forEach { entry in
                    if let response = PartialRecord.decode(entry.value)?.storedResponse, matches(response) {
                        partialKeys.append(response.key)
                    }
                    return true
                }
            }
            return (ids, partialKeys)
        }
    }
}
