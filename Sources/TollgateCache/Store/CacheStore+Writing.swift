public import Foundation
public import NIOCore
public import TollgateHTTP
import TollgateStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheStore {
    /// Starts storing a response whose body will be streamed in.
    ///
    /// The stored header fields are filtered here (``StoredHeaders``: no hop-by-hop fields, no
    /// Set-Cookie, no `private="…"` fields in a shared cache), whatever the caller passes;
    /// the request fields the response's Vary names are recorded. Whether the response
    /// *should* be stored is the gate's question
    /// (``CacheRules/storability(request:response:bodyLength:context:)``), asked before.
    ///
    /// - Parameters:
    ///   - key: the key to file it under (GET; see ``CacheKey``).
    ///   - request: the request it answers (its URL and Vary'd fields are recorded).
    ///   - response: the response head as received.
    ///   - requestTime: when the request was sent.
    ///   - responseTime: when the response head arrived.
    /// - Throws: ``CacheStoreError/bodyTooLarge`` when Content-Length is already over the
    ///   per-response limit; ``CacheStoreError/closed``.
    public func beginStore(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) throws -> CacheEntryWriter {
        try checkWritable()
        let limit = options.rules.maximumBodyLength(capacity: options.maxSize)
        if let length = response.contentLength, length > limit { throw CacheStoreError.bodyTooLarge }
        return CacheEntryWriter(
            store: self,
            id: allocateID(),
            draft: draft(
                key: key,
                request: request,
                response: response,
                requestTime: requestTime,
                responseTime: responseTime
            ),
            requestHeaders: request.headerFields,
            expectedLength: response.contentLength,
            limit: limit
        )
    }

    /// The metadata of a response about to be stored, before its body is known.
    private func draft(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) -> StoredResponse {
        let now = options.clock()
        return StoredResponse(
            key: key,
            url: request.url.absoluteString,
            status: response.status,
            reason: response.reason,
            headerFields: StoredHeaders.filter(
                response.headerFields, shared: options.rules.isShared, keepsCookies: options.rules.storesSetCookie
            ).fields,
            requestTime: requestTime,
            responseTime: responseTime,
            varyingRequestFields: VaryMatching.varyingFields(
                of: Vary(fieldValues: response.headerFields.values(for: .vary)),
                in: request.headerFields
            ),
            storedAt: now,
            lastAccess: now
        )
    }

    /// Stores a response with a body held in memory (``beginStore(key:request:response:requestTime:responseTime:)``,
    /// one append, commit). Blocking.
    @discardableResult
    public func store(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        body: ByteBuffer,
        requestTime: Date,
        responseTime: Date
    ) throws -> CacheEntryID {
        let writer = try beginStore(
            key: key,
            request: request,
            response: response,
            requestTime: requestTime,
            responseTime: responseTime
        )
        try writer.append(body)
        return try writer.commit()
    }

    /// Stores a response whose body is already in a file (e.g. a download task's file),
    /// taking the file over: on success it is moved into `bodies/` (or, when small, read
    /// inline and removed); on failure it is left where it was. Blocking.
    ///
    /// A file on another file system is copied instead of moved.
    @discardableResult
    public func store(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        bodyFile path: String,
        requestTime: Date,
        responseTime: Date
    ) throws -> CacheEntryID {
        try checkWritable()
        let source = BodyFiles(directory: (path as NSString).deletingLastPathComponent)
        let (length, digest) = try source.digest(of: (path as NSString).lastPathComponent)
        if let expected = response.contentLength, expected != length { throw CacheStoreError.truncatedBody }
        guard length <= options.rules.maximumBodyLength(capacity: options.maxSize) else {
            throw CacheStoreError.bodyTooLarge
        }
        func copyThroughWriter() throws -> CacheEntryID {
            let body = try CacheBody.file(path: path, length: length).readAll()
            let id = try store(
                key: key,
                request: request,
                response: response,
                body: body,
                requestTime: requestTime,
                responseTime: responseTime
            )
            unlink(path)
            return id
        }
        if length <= Int64(options.inlineBodyLimit) { return try copyThroughWriter() }
        let id = allocateID()
        let finalName = BodyFiles.finalName(for: id)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(path)") }
        let synced = fsync(fd) == 0
        systemClose(fd)
        // Another file system (EXDEV), or a file that cannot be synced: copy it instead.
        guard synced, rename(path, files.path(finalName)) == 0 else { return try copyThroughWriter() }
        do {
            try files.syncDirectory()
        } catch {
            files.remove(finalName)
            throw error
        }
        var stored = draft(
            key: key,
            request: request,
            response: response,
            requestTime: requestTime,
            responseTime: responseTime
        )
        stored.bodyLength = length
        stored.bodyDigest = digest
        stored.bodyLocation = .file(finalName)
        stored.headerFields.replaceOrAdd(name: .contentLength, value: String(length))
        return try commitVariant(
            id,
            response: stored,
            inlineBody: nil,
            requestHeaders: request.headerFields,
            file: finalName
        )
    }

    /// The LMDB half of storing: pending hits applied, the variant filed (replacing what the
    /// same request selected), LRU eviction down to the capacity, all in one transaction;
    /// then the freed files unlinked. On failure `file` (already published) is removed.
    func commitVariant(
        _ id: UInt64,
        response: StoredResponse,
        inlineBody: [UInt8]?,
        requestHeaders: HeaderFields,
        file: String?
    ) throws -> CacheEntryID {
        do {
            try checkWritable()
            let record =
                inlineBody.map { body in body.withUnsafeBytes { response.encodedRecord(inlineBody: $0) } }
                ?? response.encodedRecord()
            let accesses = takePendingAccess()
            let now = options.clock()
            var freed: [String] = []
            try environment.write { txn in
                freed = []  // the closure runs again if the map had to grow
                try applyAccesses(accesses, txn)
                freed += try insertVariant(
                    id,
                    record: record,
                    response: response,
                    requestHeaders: requestHeaders,
                    now: now,
                    txn
                )
                freed += try evictLocked(toFit: 0, protecting: id, txn).files
                // A complete response makes what was held in pieces of it obsolete.
                if let partial = try dropPartialRecord(response.key, txn) { freed.append(partial) }
            }
            for name in freed { files.remove(name) }
            return CacheEntryID(rawValue: id)
        } catch {
            if let file { files.remove(file) }
            throw error
        }
    }

    /// Updates a stored variant's header fields from a 304 (``CacheRules/merge304(stored:notModified:requestTime:responseTime:)``)
    /// and returns the updated metadata; nil when the variant is gone or the 304 does not
    /// identify it (then it should not be used: make an unconditional request). Blocking.
    public func updateHeaders(
        of id: CacheEntryID,
        notModified: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) throws -> StoredResponse? {
        let rules = options.rules
        return try rewriteHeaders(of: id) { old in
            rules.merge304(stored: old, notModified: notModified, requestTime: requestTime, responseTime: responseTime)
        }
    }

    /// Updates a stored GET variant from a 200 answering a HEAD request that selected it (RFC 9111
    /// §4.3.5, ``CacheRules/mergeHEAD(stored:head:requestTime:responseTime:)``), or removes the
    /// variant when the HEAD response does not identify it. Returns the updated metadata, or nil
    /// (removed or gone). Blocking.
    @discardableResult
    public func updateHeaders(
        of id: CacheEntryID,
        headResponse: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) throws -> StoredResponse? {
        let rules = options.rules
        var identified = true
        let updated = try rewriteHeaders(of: id) { old in
            let merged = rules.mergeHEAD(stored: old, head: headResponse, requestTime: requestTime, responseTime: responseTime)
            identified = merged != nil
            return merged
        }
        if !identified { try remove(id: id) }
        return updated
    }

    /// Replaces a variant's metadata with `merge`'s answer for it (nil: left as it is, and nil
    /// returned), in one write transaction, keeping an inline body and the last access time.
    private func rewriteHeaders(of id: CacheEntryID, _ merge: (StoredResponse) -> StoredResponse?) throws -> StoredResponse? {
        try checkWritable()
        return try environment.write { txn in try rewriteRecord(id.rawValue, txn, merge) }
    }

    /// Replaces variant `id`'s metadata with `merge`'s answer for it (nil: left as it is, and nil
    /// returned) in `txn`, keeping an inline body and the last access time.
    func rewriteRecord(_ id: UInt64, _ txn: WriteTransaction, _ merge: (StoredResponse) -> StoredResponse?) throws -> StoredResponse? {
        guard
            let (old, body, oldCount) = try txn.withValue(
                forKey: id,
                in: db.variants,
                { record in
                    StoredResponse.decode(record: record).map { decoded in
                        (decoded.response, decoded.inlineBody.map { Array(record[$0]) }, record.count)
                    }
                }
            ) ?? nil,
            var merged = merge(old)
        else { return nil }
        merged.lastAccess = old.lastAccess
        let record =
            body.map { bytes in bytes.withUnsafeBytes { merged.encodedRecord(inlineBody: $0) } }
            ?? merged.encodedRecord()
        try txn.put(id, record, in: db.variants)
        try adjustTotal("bytes", by: Int64(record.count - oldCount), txn)
        return merged
    }

    /// Removes every variant stored under `key` (invalidation, purge); returns how many. Blocking.
    @discardableResult
    public func remove(key: CacheKey) throws -> Int {
        try checkWritable()
        var freed: [String] = []
        let count = try environment.write { txn -> Int in
            freed = []
            let ids = try variantIDs(key, txn)
            for id in ids {
                if let file = try removeVariant(id, txn) { freed.append(file) }
            }
            try txn.delete(key.storageKey, in: db.entries)  // ids whose records were already gone
            if let partial = try dropPartialRecord(key, txn) { freed.append(partial) }
            return ids.count
        }
        for name in freed { files.remove(name) }
        return count
    }

    /// Removes every variant of `url` (keyed with `options.keyNormalizer`); returns how many.
    /// The admin API's and the CLI's purge. Blocking.
    ///
    /// - Throws: ``CacheStoreError/invalidURL`` when `url` is not an absolute http(s) URL.
    @discardableResult
    public func remove(url: String) throws -> Int {
        guard let parsed = HTTPURL(string: url), parsed.scheme == "http" || parsed.scheme == "https" else {
            throw CacheStoreError.invalidURL
        }
        return try remove(key: CacheKey(url: parsed, normalizer: options.keyNormalizer))
    }

    /// Removes one variant; returns whether it was there. Blocking.
    @discardableResult
    public func remove(id: CacheEntryID) throws -> Bool {
        try checkWritable()
        var file: String?
        let existed = try environment.write { txn -> Bool in
            let existed = try txn.contains(id.rawValue, in: db.variants)
            file = try removeVariant(id.rawValue, txn)
            return existed
        }
        if let file { files.remove(file) }
        return existed
    }

    /// Removes everything stored (`Session.reset()`); the hit and miss counters stay. Blocking.
    public func removeAll() throws {
        try checkWritable()
        _ = takePendingAccess()
        try environment.write { txn in
            for database in [db.entries, db.variants, db.lru, db.access, db.partials] { try txn.clear(database) }
            try txn.put("bytes", UInt64(0), in: db.totals)
            try txn.put("variants", UInt64(0), in: db.totals)
        }
        // Temporary files belong to writers still running; their commits add entries later.
        for name in files.names() where BodyFiles.id(fromFinalName: name) != nil || name.hasPrefix(BodyFiles.partialPrefix) {
            files.remove(name)
        }
        try? files.syncDirectory()
    }
}
