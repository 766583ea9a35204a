import Foundation
import TollgateStore

/// The index's own consistency, for ``CacheStore/verify(repair:)``: that every key's entry lists
/// variants filed under that key, that every variant is listed by its key's entry and ranked once
/// in the LRU index, and that the totals are what the variants add up to.
///
/// A store written by two processes at once before session 23 (ids counted on from the same last
/// one, see `reserveIDBlock`) can hold every one of these: an entry listing a variant of another
/// URL, two variants' LRU ranks on one key, totals counting a record that was overwritten. Lookups
/// already skip a variant of another key; this finds the rest, and `--repair` mends it.
extension CacheStore {
    /// What the index databases disagree on.
    struct IndexFindings {
        /// An entry lists a variant that is absent or filed under another key.
        var misfiled: [(entryKey: [UInt8], id: UInt64)] = []
        /// A variant its own key's entry does not list (no lookup finds it).
        var unlisted: [(id: UInt64, url: String)] = []
        /// LRU keys whose variant is gone or whose access record does not point back at them.
        var staleLRU: [(sequence: UInt64, id: UInt64)] = []
        /// Variants with no access record, or whose LRU rank is not theirs (eviction skips them).
        var unranked: [(id: UInt64, url: String)] = []
        /// What the variants add up to, when the stored totals say otherwise.
        var totals: (bytes: Int64, variants: Int64, stored: (bytes: Int64, variants: Int64))?

        /// The findings as ``CacheVerification`` problems.
        var problems: [CacheVerification.Problem] {
            misfiled.map { .init(id: CacheEntryID(rawValue: $0.id), url: Self.text($0.entryKey), kind: .misfiled) }
                + unlisted.map { .init(id: CacheEntryID(rawValue: $0.id), url: $0.url, kind: .unlisted) }
                + staleLRU.map {
                    .init(id: CacheEntryID(rawValue: 0), url: nil, kind: .lruInconsistent, detail: "LRU rank \($0.sequence) of no variant")
                }
                + unranked.map { .init(id: CacheEntryID(rawValue: $0.id), url: $0.url, kind: .lruInconsistent) }
                + (totals.map { totals in
                    [
                        .init(
                            id: CacheEntryID(rawValue: 0), url: nil, kind: .totalsInconsistent,
                            detail: "stored \(totals.stored.bytes) bytes in \(totals.stored.variants) variants; "
                                + "the variants add up to \(totals.bytes) bytes in \(totals.variants)"
                        )
                    ]
                } ?? [])
        }

        /// An entry's storage key as text (`GET URL`, or `#` and a digest for a long one).
        private static func text(_ key: [UInt8]) -> String {
            String(decoding: key, as: UTF8.self)
        }
    }

    /// Reads the whole index in `txn` and reports where it disagrees with itself.
    func checkIndex(_ txn: ReadTransaction) throws -> IndexFindings {
        let db = self.db
        var findings = IndexFindings()
        var bytes: Int64 = 0
        var count: Int64 = 0
        try txn.withCursor(in: db.variants) { cursor in
            try cursor.forEach { entry in
                let id = try entry.decodedKey(as: UInt64.self)
                count += 1
                guard let (response, _) = StoredResponse.decode(record: entry.value) else {
                    bytes += Int64(entry.value.count)  // charged by its size, as removing it does
                    return true
                }
                bytes += Self.charge(recordCount: entry.value.count, response: response)
                let listed = try txn.withValue(forKey: response.key.storageKey, in: db.entries) { Self.decodeIDs($0) } ?? []
                if !listed.contains(id) { findings.unlisted.append((id, response.url)) }
                let access = try txn.withValue(forKey: id, in: db.access) { Self.decodeAccess($0) } ?? nil
                let ranked = try access.map { try txn.get($0.sequence, as: UInt64.self, in: db.lru) == id } ?? false
                if !ranked { findings.unranked.append((id, response.url)) }
                return true
            }
        }
        try txn.withCursor(in: db.entries) { cursor in
            try cursor.forEach { entry in
                let key = Array(entry.key)
                for id in Self.decodeIDs(entry.value) {
                    let filedUnder = try txn.withValue(forKey: id, in: db.variants) { record in
                        StoredResponse.decode(record: record)?.response.key.storageKey
                    }
                    if filedUnder != key { findings.misfiled.append((key, id)) }
                }
                return true
            }
        }
        try txn.withCursor(in: db.lru) { cursor in
            try cursor.forEach { entry in
                let sequence = try entry.decodedKey(as: UInt64.self)
                let id = try entry.decodedValue(as: UInt64.self)
                let access = try txn.withValue(forKey: id, in: db.access) { Self.decodeAccess($0) } ?? nil
                let variantExists = try txn.contains(id, in: db.variants)
                if access?.sequence != sequence || !variantExists { findings.staleLRU.append((sequence, id)) }
                return true
            }
        }
        let stored = (bytes: try total("bytes", txn), variants: try total("variants", txn))
        if stored != (bytes, count) { findings.totals = (bytes, count, stored) }
        return findings
    }

    /// Mends what ``checkIndex(_:)`` found, in one write transaction: entries stop listing what is
    /// not theirs, unlisted variants are removed (with their body files), stale LRU ranks go,
    /// unranked variants get a rank as if just used, and the totals are counted again. Returns
    /// how many things it changed.
    func repairIndex(_ findings: IndexFindings) throws -> Int {
        let db = self.db
        var freed: [String] = []
        let repairs = try environment.write { txn -> Int in
            freed = []  // the closure runs again if the map had to grow
            var repairs = 0
            for (key, id) in findings.misfiled {
                guard var ids = try txn.withValue(forKey: key, in: db.entries, { Self.decodeIDs($0) }), ids.contains(id) else {
                    continue
                }
                ids.removeAll { $0 == id }
                if ids.isEmpty { _ = try txn.delete(key, in: db.entries) } else { try txn.put(key, Self.encodeIDs(ids), in: db.entries) }
                repairs += 1
            }
            for (id, _) in findings.unlisted {
                if let file = try removeVariant(id, txn) { freed.append(file) }
                repairs += 1
            }
            for (sequence, id) in findings.staleLRU where try txn.delete(sequence, in: db.lru) {
                // The access record of a variant that is gone goes with its rank.
                let variantExists = try txn.contains(id, in: db.variants)
                if !variantExists { _ = try txn.delete(id, in: db.access) }
                repairs += 1
            }
            let now = options.clock()
            for (id, _) in findings.unranked where try txn.contains(id, in: db.variants) {
                let sequence = try allocateSequence(txn)
                try txn.put(sequence, id, in: db.lru)
                try txn.put(id, Self.encodeAccess(sequence: sequence, time: now), in: db.access)
                repairs += 1
            }
            // Counted again after the removals above.
            let recount = try checkIndex(txn)
            if let totals = recount.totals {
                try txn.put("bytes", UInt64(max(0, totals.bytes)), in: db.totals)
                try txn.put("variants", UInt64(max(0, totals.variants)), in: db.totals)
                repairs += 1
            }
            return repairs
        }
        for name in freed { files.remove(name) }
        return repairs
    }
}
