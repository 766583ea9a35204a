import Foundation
import NIOCore
public import TollgateHTTP
import TollgateStore

extension CacheStore {
    /// The stored variant of `key` that a request with `requestHeaders` selects (RFC 9111
    /// §4.1: its Vary'd fields match; among several, the most recent response), or nil.
    ///
    /// Synchronous and safe on an event loop: the key's variants as remembered for the newest
    /// snapshot (``LookupMemo``), or one memory-mapped read transaction; then an in-memory note
    /// of the hit (written to the LRU index later, in a batch). Counts a hit or a miss for
    /// ``statistics()``: these are storage-level counts (a variant was found or not), whether or
    /// not it then turns out fresh.
    ///
    /// - Parameters:
    ///   - key: the request's key (``CacheKey/init(request:normalizer:)``).
    ///   - requestHeaders: the request's header fields, for Vary.
    ///   - negotiating: when no variant matches, the most recent one whose representation the
    ///     request accepts by `Accept` and `Accept-Encoding` (``ContentNegotiation``): for an
    ///     offline request, which cannot fetch the variant it would select.
    public func lookup(_ key: CacheKey, requestHeaders: HeaderFields, negotiating: Bool = false) throws -> CacheEntry? {
        try checkOpen()
        let variants: [CacheEntry]
        if let known = lookupMemo.variants(of: key, at: try environment.lastCommittedTransactionID) {
            variants = known
        } else {
            let (read, snapshot) = try environment.read { txn in (try storedVariants(of: key, in: txn), try txn.id) }
            lookupMemo.remember(read, of: key, at: snapshot)
            variants = read
        }
        var best: CacheEntry?
        for variant in variants where VaryMatching.matches(variant.response, request: requestHeaders) {
            if best.map({ variant.response.responseTime > $0.response.responseTime }) ?? true { best = variant }
        }
        if best == nil, negotiating { best = Self.acceptedVariant(of: variants, requestHeaders: requestHeaders) }
        noteLookup(best?.id.rawValue)
        return best
    }

    /// The most recent of `variants` whose representation a request with `requestHeaders`
    /// accepts (``ContentNegotiation``). Out of line: only an offline lookup that found no match
    /// comes here.
    @inline(never)
    private static func acceptedVariant(of variants: [CacheEntry], requestHeaders: HeaderFields) -> CacheEntry? {
        var best: CacheEntry?
        for variant in variants where ContentNegotiation.accepts(variant.response, request: requestHeaders) {
            if best.map({ variant.response.responseTime > $0.response.responseTime }) ?? true { best = variant }
        }
        return best
    }

    /// Whether anything is stored under `key` (no hit or miss counted).
    public func holds(_ key: CacheKey) -> Bool {
        guard (try? checkOpen()) != nil else { return false }
        let db = self.db
        let found = try? environment.read { txn in
            try key.withStorageKey { storageKey in try txn.withValue(forKeyBytes: storageKey, in: db.entries) { _ in true } }
        }
        return (found ?? nil) ?? false
    }

    /// Every stored variant of `key` in `txn`, decoded, with its body (inline bodies as buffers).
    func storedVariants(of key: CacheKey, in txn: ReadTransaction) throws -> [CacheEntry] {
        let db = self.db
        let allocator = self.allocator
        var variants: [CacheEntry] = []
        // The variant ids are read in place from the key's entry (no array of them).
        _ = try key.withStorageKey { storageKey in try txn.withValue(forKeyBytes: storageKey, in: db.entries) { ids in
            var offset = 0
            while offset + 8 <= ids.count {
                let id = UInt64(bigEndian: ids.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
                // The last access recorded in the LRU index (newer than the record's) is read
                // first and decoded in, rather than set on the decoded response (a copy of it).
                let lastAccess = try txn.withValue(forKey: id, in: db.access) { Self.decodeAccess($0)?.time } ?? nil
                let variant: CacheEntry?? = try txn.withValue(forKey: id, in: db.variants) { record in
                    // A record filed under another key is never served for this one (an index an
                    // older build's id collision left inconsistent; see `reserveIDBlock`).
                    guard let decoded = decodedRecords.decode(id: id, record: record, lastAccess: lastAccess),
                        decoded.response.key == key
                    else {
                        return nil
                    }
                    let response = decoded.response
                    let body: CacheBody
                    switch response.bodyLocation {
                    case .inline:
                        if let kept = decoded.body {
                            body = .inline(kept)
                        } else {
                            let range = decoded.inlineBody
                            var buffer = allocator.buffer(capacity: range?.count ?? 0)
                            if let range { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: record[range])) }
                            body = .inline(buffer)
                        }
                    case .file(let name):
                        body = .file(path: files.path(name), length: response.bodyLength)
                    }
                    return CacheEntry(id: CacheEntryID(rawValue: id), response: response, body: body)
                }
                if let variant = variant ?? nil { variants.append(variant) }
            }
        } }
        return variants
    }

    /// Records a hit (with the variant hit) or a miss, and starts a batch write when one is due.
    private func noteLookup(_ id: UInt64?) {
        if options.readOnly {
            // Counted for statistics(), never written: no recency, no batches.
            state.withLock { state in if id == nil { state.misses += 1 } else { state.hits += 1 } }
            return
        }
        let now = options.clock()
        let due = state.withLock { state -> Bool in
            guard let id else {
                state.misses += 1
                state.unwrittenMisses += 1
                return false
            }
            state.hits += 1
            state.unwrittenHits += 1
            state.pendingAccess[id] = now
            return state.pendingAccess.count >= options.accessBatchSize
                || now.timeIntervalSince(state.lastFlush) >= options.accessFlushInterval
        }
        if due { flushAccessInBackground() }
    }

    /// Hands the pending hits to the store's writer thread (group commit); never blocks.
    /// If the writer's queue is full the batch is dropped: recency is best-effort.
    func flushAccessInBackground() {
        let accesses = takePendingAccess()
        let counts = takeUnwrittenCounts()
        writer.submit(
            { [self] txn in
                try applyAccesses(accesses, txn)
                try addCounts(counts, txn)
                return try txn.id
            },
            completion: { [lookupMemo] result in
                // The writer groups only access batches: the commit changed nothing a lookup serves.
                if case .success(let id) = result { lookupMemo.accessBatchCommitted(as: id) }
            }
        )
    }

    /// Writes the hits recorded in memory to the LRU index and the counters to disk now
    /// (blocking; `close()` does it too).
    public func flush() throws {
        try checkOpen()
        if !options.readOnly { try writePendingAccess() }
    }
}
