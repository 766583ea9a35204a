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
        guard !prefix.isEmpty else {
            try checkWritable()
            return 0
        }
        return try removeAll { $0.key.url.hasPrefix(prefix) }
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
        guard !tags.isEmpty else {
            try checkWritable()
            return 0
        }
        return try removeAll { CacheTags.fields(field, of: $0.headerFields, nameAnyOf: tags) }
    }

    /// Removes every variant and every response held in pieces whose stored response `matches`,
    /// in one transaction; returns how many variants.
    private func removeAll(where matches: (StoredResponse) -> Bool) throws -> Int {
        try checkWritable()
        let db = self.db
        // What matches first, from a read (no writer held while every record is decoded).
        let (ids, partialKeys) = try environment.read { txn -> ([UInt64], [CacheKey]) in
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
        guard !ids.isEmpty || !partialKeys.isEmpty else { return 0 }
        var freed: [String] = []
        let count = try environment.write { txn -> Int in
            freed = []
            var count = 0
            // A variant removed meanwhile (evicted, replaced) is not counted.
            for id in ids where try txn.contains(id, in: db.variants) {
                if let file = try removeVariant(id, txn) { freed.append(file) }
                count += 1
            }
            for key in partialKeys {
                if let file = try dropPartialRecord(key, txn) { freed.append(file) }
            }
            return count
        }
        for name in freed { files.remove(name) }
        return count
    }
}
