import Foundation
import TollgateStore

extension CacheStore {
    /// Entries, bytes, capacity and the hit/miss counters (those include hits not yet
    /// written to disk).
    public func statistics() throws -> CacheStatistics {
        try checkOpen()
        let db = self.db
        let (variants, urls, bytes) = try environment.read { txn in
            (try txn.count(in: db.variants), try txn.count(in: db.entries), try total("bytes", txn))
        }
        let (hits, misses, evictions) = state.withLock { ($0.hits, $0.misses, $0.evictions) }
        return CacheStatistics(
            entries: variants,
            urls: urls,
            bytes: bytes,
            capacity: options.maxSize,
            hits: hits,
            misses: misses,
            evictions: evictions
        )
    }

    /// Every stored variant, in id order (oldest stored first), up to `limit`.
    public func list(limit: Int = .max) throws -> [CacheListing] {
        try checkOpen()
        let db = self.db
        return try environment.read { txn in
            var listing: [CacheListing] = []
            try txn.withCursor(in: db.variants) { cursor in
                try cursor.forEach { entry in
                    let id = try entry.decodedKey(as: UInt64.self)
                    if let (response, _) = StoredResponse.decode(record: entry.value) {
                        listing.append(
                            CacheListing(
                                id: CacheEntryID(rawValue: id),
                                url: response.url,
                                status: response.status,
                                size: response.bodyLength,
                                storedAt: response.storedAt
                            )
                        )
                    }
                    return listing.count < limit
                }
            }
            return listing
        }
    }

    /// Re-hashes every stored body and compares it with the recorded length and SHA-256, and
    /// checks the index against itself (``checkIndex(_:)``: entries, LRU ranks, totals).
    ///
    /// Inline bodies and the index are checked inside one read transaction; body files
    /// afterwards, outside it (so a long verify does not hold an old snapshot). With `repair`,
    /// the index is mended and the bad entries are removed. Blocking; reads every byte stored.
    public func verify(repair: Bool = false) throws -> CacheVerification {
        if repair { try checkWritable() } else { try checkOpen() }
        let db = self.db
        var problems: [CacheVerification.Problem] = []
        var fileBodies: [(id: UInt64, response: StoredResponse, name: String)] = []
        var index = IndexFindings()
        let checked = try environment.read { txn -> Int in
            index = try checkIndex(txn)
            var checked = 0
            try txn.withCursor(in: db.variants) { cursor in
                try cursor.forEach { entry in
                    checked += 1
                    let id = try entry.decodedKey(as: UInt64.self)
                    guard let (response, range) = StoredResponse.decode(record: entry.value) else {
                        problems.append(.init(id: CacheEntryID(rawValue: id), url: nil, kind: .undecodable))
                        return true
                    }
                    switch response.bodyLocation {
                    case .file(let name):
                        fileBodies.append((id, response, name))
                    case .inline:
                        let body =
                            range.map { UnsafeRawBufferPointer(rebasing: entry.value[$0]) }
                            ?? UnsafeRawBufferPointer(start: nil, count: 0)
                        if let kind = Self.check(
                            length: Int64(body.count),
                            digest: SHA256.hash(body),
                            against: response
                        ) {
                            problems.append(.init(id: CacheEntryID(rawValue: id), url: response.url, kind: kind))
                        }
                    }
                    return true
                }
            }
            return checked
        }
        for (id, response, name) in fileBodies {
            let kind: CacheVerification.Problem.Kind?
            if let (length, digest) = try? files.digest(of: name) {
                kind = Self.check(length: length, digest: digest, against: response)
            } else {
                kind = .missingBody
            }
            if let kind { problems.append(.init(id: CacheEntryID(rawValue: id), url: response.url, kind: kind)) }
        }
        var removed = 0
        var indexRepairs = 0
        if repair {
            indexRepairs = try repairIndex(index)
            for problem in problems where try remove(id: problem.id) { removed += 1 }
        }
        return CacheVerification(
            checked: checked, problems: index.problems + problems, removed: removed, indexRepairs: indexRepairs
        )
    }

    /// Evicts least recently used entries until `bytes` more fit under the capacity; returns
    /// how many were evicted. Storing already does this; this is for a capacity lowered by a
    /// configuration reload, or to make room ahead of a large write. Blocking.
    @discardableResult
    public func evict(toFit bytes: Int64 = 0) throws -> Int {
        try checkWritable()
        let accesses = takePendingAccess()
        var freed: [String] = []
        let count = try environment.write { txn -> Int in
            try applyAccesses(accesses, txn)
            let (count, files) = try evictLocked(toFit: bytes, protecting: nil, txn)
            freed = files
            return count
        }
        for name in freed { files.remove(name) }
        return count
    }

    /// The ids in LRU order, least recently used first (tests and diagnostics).
    public func leastRecentlyUsed(limit: Int = .max) throws -> [CacheEntryID] {
        try checkOpen()
        let db = self.db
        return try environment.read { txn in
            let entries: [(key: UInt64, value: UInt64)] = try txn.entries(in: db.lru, limit: limit)
            return entries.map { CacheEntryID(rawValue: $0.value) }
        }
    }

    private static func check(
        length: Int64,
        digest: [UInt8],
        against response: StoredResponse
    ) -> CacheVerification.Problem.Kind? {
        if length != response.bodyLength { return .lengthMismatch }
        if digest != response.bodyDigest { return .digestMismatch }
        return nil
    }
}
