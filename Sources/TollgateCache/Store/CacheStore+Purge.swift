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
    /// form. Blocking; reads only the keys under the prefix (``prefixMatches(_:)``).
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
            let matches = try prefixMatches(prefix)
            found = (matches.ids, matches.partialKeys)
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

    /// The variants and the responses held in pieces of every URL starting with `prefix`, from
    /// one read, found by their place in key order rather than by reading every record: both
    /// tables are keyed by ``CacheKey/storageKey`` (`METHOD URL`), so for each method present the
    /// keys under `METHOD prefix` are one range. Keys too long to be stored as text (`#` and a
    /// digest) are few, and read and matched by the URL their records hold. `examined`: the
    /// entries looked at (what a purge of a few URLs in a large cache costs).
    func prefixMatches(_ prefix: String) throws -> (ids: [UInt64], partialKeys: [CacheKey], examined: Int) {
        let db = self.db
        return try environment.read { txn in
            var examined = 0
            var ids: [UInt64] = []
            examined += try Self.visitKeys(under: prefix, in: db.entries, txn) { entry, hashed in
                let variants = Self.decodeIDs(entry.value)
                guard hashed else {
                    ids += variants
                    return
                }
                for id in variants {
                    if try self.variant(id, txn)?.response.key.url.hasPrefix(prefix) == true { ids.append(id) }
                }
            }
            var partialKeys: [CacheKey] = []
            examined += try Self.visitKeys(under: prefix, in: db.partials, txn) { entry, hashed in
                guard let key = PartialRecord.decode(entry.value)?.storedResponse?.key else { return }
                if !hashed || key.url.hasPrefix(prefix) { partialKeys.append(key) }
            }
            return (ids, partialKeys, examined)
        }
    }

    /// Calls `visit` with every entry of `table` (keyed by ``CacheKey/storageKey``) whose text key
    /// is `METHOD prefix…`, and with every hashed key (`hashed`: the caller matches those by their
    /// record); returns how many entries it visited.
    private static func visitKeys(
        under prefix: String, in table: Database, _ txn: ReadTransaction, _ visit: (CursorEntry, _ hashed: Bool) throws -> Void
    ) throws -> Int {
        var visited = 0
        try txn.withCursor(in: table) { cursor in
            try cursor.forEach(prefix: [UInt8(ascii: "#")]) { entry in
                visited += 1
                try visit(entry, true)
                return true
            }
            // Text keys start with their method: after the hashed ones ('#' sorts before letters).
            var methodStart = try cursor.seek(atLeast: [UInt8(ascii: "$")])
            while let first = methodStart {
                guard let space = first.key.firstIndex(of: 0x20) else {
                    methodStart = try cursor.next()  // not a key of this form: passed over
                    continue
                }
                let method = Array(first.key[..<space])
                try cursor.forEach(prefix: method + [0x20] + Array(prefix.utf8)) { entry in
                    visited += 1
                    try visit(entry, false)
                    return true
                }
                // The next method's first key: past every `METHOD ` key (0x21 follows the space).
                methodStart = try cursor.seek(atLeast: method + [0x21])
            }
        }
        return visited
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
