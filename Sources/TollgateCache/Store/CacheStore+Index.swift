import Foundation
import TollgateHTTP
import TollgateStore

/// The transactional bookkeeping shared by every write: variant lists, the LRU index and totals.
extension CacheStore {
    /// One recorded hit, ready to be written to the LRU index.
    struct Access: Sendable {
        let id: UInt64
        let time: Date
    }

    // MARK: - Encodings

    static func encodeIDs(_ ids: [UInt64]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ids.count * 8)
        for id in ids { withUnsafeBytes(of: id.bigEndian) { bytes.append(contentsOf: $0) } }
        return bytes
    }

    static func decodeIDs(_ bytes: UnsafeRawBufferPointer) -> [UInt64] {
        stride(from: 0, to: bytes.count - bytes.count % 8, by: 8).map {
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: $0, as: UInt64.self))
        }
    }

    static func encodeAccess(sequence: UInt64, time: Date) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: sequence.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: time.timeIntervalSince1970.bitPattern.bigEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    static func decodeAccess(_ bytes: UnsafeRawBufferPointer) -> (sequence: UInt64, time: Date)? {
        guard bytes.count == 16 else { return nil }
        let sequence = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        let bits = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        return (sequence, Date(timeIntervalSince1970: Double(bitPattern: bits)))
    }

    /// The bytes a variant is charged against the capacity: its record, plus its file.
    static func charge(recordCount: Int, response: StoredResponse) -> Int64 {
        if case .file = response.bodyLocation { return Int64(recordCount) + response.bodyLength }
        return Int64(recordCount)
    }

    // MARK: - Reads inside a transaction

    func variantIDs(_ key: CacheKey, _ txn: ReadTransaction) throws -> [UInt64] {
        try txn.withValue(forKey: key.storageKey, in: db.entries) { Self.decodeIDs($0) } ?? []
    }

    /// The decoded metadata and charge of a variant; nil when absent or undecodable.
    func variant(_ id: UInt64, _ txn: ReadTransaction) throws -> (response: StoredResponse, charge: Int64)? {
        try txn.withValue(forKey: id, in: db.variants) { record in
            StoredResponse.decode(record: record).map {
                ($0.response, Self.charge(recordCount: record.count, response: $0.response))
            }
        } ?? nil
    }

    func total(_ name: String, _ txn: ReadTransaction) throws -> Int64 {
        Int64(clamping: try txn.get(name, as: UInt64.self, in: db.totals) ?? 0)
    }

    func adjustTotal(_ name: String, by delta: Int64, _ txn: WriteTransaction) throws {
        let value = max(0, try total(name, txn) + delta)
        try txn.put(name, UInt64(value), in: db.totals)
    }

    // MARK: - Writes inside a transaction

    /// Files a new variant under its key, replacing the variants the same request would
    /// have selected; returns the body files of the replaced ones (to unlink after commit).
    func insertVariant(
        _ id: UInt64,
        record: [UInt8],
        response: StoredResponse,
        requestHeaders: HeaderFields,
        now: Date,
        _ txn: WriteTransaction
    ) throws -> [String] {
        var freed: [String] = []
        for old in try variantIDs(response.key, txn) {
            guard let existing = try variant(old, txn)?.response else { continue }
            if VaryMatching.matches(existing, request: requestHeaders), let file = try removeVariant(old, txn) {
                freed.append(file)
            }
        }
        var ids = try variantIDs(response.key, txn)
        // At most `maximumVariantsPerKey` variants of one URL (ATS's `max_alts`): a URL that varies
        // on a field clients fill at will (User-Agent, a cookie) would otherwise gather one variant
        // per value, and every lookup of it reads them all. The one used longest ago goes.
        while ids.count >= max(1, options.maximumVariantsPerKey), let victim = try leastRecentlyUsed(of: ids, txn) {
            if let file = try removeVariant(victim, txn) { freed.append(file) }
            ids.removeAll { $0 == victim }
        }
        ids.append(id)
        try txn.put(response.key.storageKey, Self.encodeIDs(ids), in: db.entries)
        try txn.put(id, record, in: db.variants)
        let sequence = try allocateSequence(txn)
        try txn.put(sequence, id, in: db.lru)
        try txn.put(id, Self.encodeAccess(sequence: sequence, time: now), in: db.access)
        try adjustTotal("bytes", by: Self.charge(recordCount: record.count, response: response), txn)
        try adjustTotal("variants", by: 1, txn)
        return freed
    }

    /// Of `ids`, the one whose last use is oldest in the LRU index (one with no access record first).
    private func leastRecentlyUsed(of ids: [UInt64], _ txn: ReadTransaction) throws -> UInt64? {
        var oldest: (id: UInt64, sequence: UInt64)?
        for id in ids {
            let sequence = try txn.withValue(forKey: id, in: db.access) { Self.decodeAccess($0)?.sequence } ?? nil
            if oldest.map({ (sequence ?? 0) < $0.sequence }) ?? true { oldest = (id, sequence ?? 0) }
        }
        return oldest?.id
    }

    /// Removes a variant and its index entries; returns its body file, if it has one (to
    /// unlink after commit). An undecodable record is removed too, charged by its size.
    @discardableResult
    func removeVariant(_ id: UInt64, _ txn: WriteTransaction) throws -> String? {
        guard let recordCount = try txn.withValue(forKey: id, in: db.variants, { $0.count }) else { return nil }
        let decoded = try variant(id, txn)
        var file: String?
        if let (response, _) = decoded {
            var ids = try variantIDs(response.key, txn)
            ids.removeAll { $0 == id }
            if ids.isEmpty {
                try txn.delete(response.key.storageKey, in: db.entries)
            } else {
                try txn.put(response.key.storageKey, Self.encodeIDs(ids), in: db.entries)
            }
            if case .file(let name) = response.bodyLocation { file = name }
        }
        if let access = try txn.withValue(forKey: id, in: db.access, { Self.decodeAccess($0) }) ?? nil {
            try txn.delete(access.sequence, in: db.lru)
        }
        try txn.delete(id, in: db.access)
        try txn.delete(id, in: db.variants)
        let charge = decoded?.charge ?? Int64(recordCount)
        try adjustTotal("bytes", by: -charge, txn)
        try adjustTotal("variants", by: -1, txn)
        return file
    }

    /// Moves hit variants to the young end of the LRU index. A hit older than the variant's
    /// recorded last access (a batch applied late, or after another process's) is ignored; a
    /// variant gone meanwhile too.
    func applyAccesses(_ accesses: [Access], _ txn: WriteTransaction) throws {
        for access in accesses {
            guard let current = try txn.withValue(forKey: access.id, in: db.access, { Self.decodeAccess($0) }) ?? nil,
                access.time >= current.time
            else { continue }
            let sequence = try allocateSequence(txn)
            try txn.delete(current.sequence, in: db.lru)
            try txn.put(sequence, access.id, in: db.lru)
            try txn.put(access.id, Self.encodeAccess(sequence: sequence, time: access.time), in: db.access)
        }
    }

    /// Evicts least recently used variants until `extra` more bytes fit under the capacity,
    /// never `protected`; returns the evicted variants' body files.
    func evictLocked(
        toFit extra: Int64,
        protecting protected: UInt64?,
        _ txn: WriteTransaction
    ) throws -> (count: Int, files: [String]) {
        var files: [String] = []
        var count = 0
        while try total("bytes", txn) + extra > options.maxSize {
            let oldest: [(key: UInt64, value: UInt64)] = try txn.entries(in: db.lru, limit: 2)
            guard let victim = oldest.first(where: { $0.value != protected }) else { break }
            // Delete the index entry itself, so an inconsistent access record cannot loop here.
            try txn.delete(victim.key, in: db.lru)
            if let file = try removeVariant(victim.value, txn) { files.append(file) }
            count += 1
        }
        if count > 0 { state.withLock { $0.evictions += UInt64(count) } }
        return (count, files)
    }

    /// Takes the hits recorded in memory, ordered by time (their sequence numbers are given in
    /// the transaction that writes them, ``applyAccesses(_:_:)``).
    func takePendingAccess() -> [Access] {
        state.withLock { state in
            let ordered = state.pendingAccess.sorted { $0.value < $1.value }
            state.pendingAccess.removeAll(keepingCapacity: true)
            state.lastFlush = options.clock()
            return ordered.map { Access(id: $0.key, time: $0.value) }
        }
    }

    /// Takes the hits and misses counted since they were last written.
    func takeUnwrittenCounts() -> (hits: UInt64, misses: UInt64) {
        state.withLock { state in
            defer { (state.unwrittenHits, state.unwrittenMisses) = (0, 0) }
            return (state.unwrittenHits, state.unwrittenMisses)
        }
    }

    /// Adds `counts` to the stored hit and miss totals: added, not set, since other processes
    /// with the store open count theirs into the same totals.
    func addCounts(_ counts: (hits: UInt64, misses: UInt64), _ txn: WriteTransaction) throws {
        for (name, count) in [("hits", counts.hits), ("misses", counts.misses)] where count > 0 {
            try txn.put(name, (try txn.get(name, as: UInt64.self, in: db.totals) ?? 0) &+ count, in: db.totals)
        }
    }

    /// Writes pending hits and the hit/miss counters now, in a transaction of its own.
    func writePendingAccess() throws {
        let accesses = takePendingAccess()
        let counts = takeUnwrittenCounts()
        try environment.write { txn in
            try applyAccesses(accesses, txn)
            try addCounts(counts, txn)
        }
    }
}
