public import Foundation
public import TollgateHTTP
import TollgateStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Partial content (RFC 9111 §3.3–3.4): 206 responses, and 200s cut short, kept in pieces and
/// combined into a complete entry once they cover the whole body.
///
/// Only responses without Vary and with a known complete length are kept; pieces are combined
/// only when they share a strong validator (a strong ETag, else Last-Modified) — a 206 without
/// one is kept alone, for the ranges it covers. A piece with another validator or length replaces
/// what was kept. At most ``maximumPartials`` responses are kept in pieces, and their present
/// bytes together stay within ``partialBudget`` (an eighth of `max-size`): beyond either the oldest
/// go first. Pieces are not counted in the cache's size (they are not servable as whole
/// responses), so this budget is what bounds their disk; they are also removed with a purge of
/// their URL, `removeAll`, or when a complete response for the URL is stored.
extension CacheStore {
    /// How many responses may be held in pieces at once.
    public static let maximumPartials = 256

    /// The present bytes all pieces together may hold: an eighth of `max-size`, so the disk a
    /// cache uses stays within 1.125 × `max-size` however many Range requests it sees (each piece
    /// is bounded by the per-response limit, 5 % of `max-size`, so the budget holds two of the
    /// largest at least).
    public var partialBudget: Int64 { options.maxSize / 8 }

    /// What is held in pieces for `key`, nil when nothing is. Cheap (one read).
    public func partialContent(for key: CacheKey) -> PartialContent? {
        guard (try? checkOpen()) != nil else { return nil }
        let db = self.db
        let storageKey = key.storageKey
        let found = try? environment.read { txn in
            try txn.withValue(forKey: storageKey, in: db.partials) { PartialRecord.decode($0) } ?? nil
        }
        guard let record = found ?? nil, let response = record.storedResponse else { return nil }
        let covered = record.ranges
        guard !covered.isEmpty else { return nil }
        return PartialContent(
            response: response, completeLength: record.completeLength, covered: covered,
            path: files.path(record.file), validator: record.validator
        )
    }

    /// Starts keeping a piece of a response: a 206 (its Content-Range says where), or a 200
    /// whose body may be cut short (`start` 0). Nil when the response cannot be kept in pieces
    /// (Vary, no strong validator, no complete length, a multipart 206, over the size limit).
    /// Opens and sizes the file and reads the record; the record is written on the store's
    /// writer thread (see ``openPiece(key:response:start:completeLength:validator:)``), so an
    /// event loop may call this.
    public func beginPiece(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) throws -> PartialPieceWriter? {
        try checkWritable()
        let fields = response.headerFields
        guard !fields.contains(.vary) else { return nil }
        // Without a strong validator a piece is kept for reuse alone: it replaces what was kept
        // and is never combined with another (§3.4 requires the same strong validator).
        let validator = CacheRules.combiningValidator(of: fields) ?? ""
        if validator.isEmpty, response.status != 206 { return nil }
        let start: Int64
        let completeLength: Int64
        switch response.status {
        case 206:
            guard let value = fields[CacheRules.contentRangeField], let contentRange = ContentRange(fieldValue: value),
                let range = contentRange.range, let length = contentRange.completeLength
            else { return nil }
            if let declared = fields.contentLength, declared != Int64(range.count) { return nil }
            start = range.lowerBound
            completeLength = length
        case 200:
            guard let length = fields.contentLength else { return nil }
            start = 0
            completeLength = length
        default:
            return nil
        }
        guard completeLength > 0, completeLength <= options.rules.maximumBodyLength(capacity: options.maxSize) else { return nil }
        var whole = fields
        whole.remove(CacheRules.contentRangeField)
        whole.replaceOrAdd(name: .contentLength, value: String(completeLength))
        let stored = StoredResponse(
            key: key, url: request.url.absoluteString, status: 200, reason: "OK",
            headerFields: StoredHeaders.filter(whole, shared: options.rules.isShared, keepsCookies: options.rules.storesSetCookie).fields,
            requestTime: requestTime, responseTime: responseTime, storedAt: options.clock()
        )
        return try openPiece(key: key, response: stored, start: start, completeLength: completeLength, validator: validator)
    }

    /// Opens the piece's file for writing and files the piece's response in the record
    /// (replacing one with another validator).
    ///
    /// Which file the piece goes to is decided by a read: the piece joins the kept file when the
    /// record there has its validator and length, else it gets a new one. The record itself is
    /// written by the store's writer thread, not here — a piece starts on an event loop, and a
    /// commit waits for two fsyncs (milliseconds on a disk) during which the loop would serve no
    /// one. ``PartialPieceWriter/finish()`` waits for that write before it records its bytes, so
    /// calls made one after another act in their order. A record changed between the read and
    /// the write leaves this piece's file unfiled: when another validator replaced the record, the
    /// piece finishes as superseded; when another piece of the same response filed its own file
    /// first (a cut download's salvaged prefix and the 206 of its resume, started at once), the
    /// piece's bytes are copied into that file as it finishes (``recordPiece``). A file no record
    /// names is then removed.
    func openPiece(
        key: CacheKey, response: StoredResponse, start: Int64, completeLength: Int64, validator: String
    ) throws -> PartialPieceWriter {
        let db = self.db
        let storageKey = key.storageKey
        let encodedResponse = Data(response.encodedRecord())
        let kept = try environment.read { txn in
            try txn.withValue(forKey: storageKey, in: db.partials) { PartialRecord.decode($0) } ?? nil
        }
        let joins = kept.map { Self.sharesPieces($0, validator: validator, completeLength: completeLength) } ?? false
        let fileName = joins ? kept!.file : BodyFiles.partialName(for: allocateID())
        writer.submit(
            { [self] txn -> [String] in
                var record = try txn.withValue(forKey: storageKey, in: db.partials) { PartialRecord.decode($0) } ?? nil
                if joins {
                    guard record?.file == fileName else { return [] }
                    record!.response = encodedResponse  // the newest piece's fields describe the whole (§3.4)
                    try txn.put(storageKey, try record!.encoded(), in: db.partials)
                    return []
                }
                if let other = record, Self.sharesPieces(other, validator: validator, completeLength: completeLength) { return [] }
                var freed = record.map { [$0.file] } ?? []
                record = PartialRecord(
                    response: encodedResponse, completeLength: completeLength, covered: [], file: fileName, validator: validator
                )
                freed += try trimPartials(txn)
                try txn.put(storageKey, try record!.encoded(), in: db.partials)
                return freed
            },
            completion: { [files] result in
                if case .success(let freed) = result { for name in freed { files.remove(name) } }
            }
        )
        let path = files.path(fileName)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(path)") }
        var info = stat()
        if fstat(fd, &info) == 0, Int64(info.st_size) < completeLength, ftruncate(fd, off_t(completeLength)) != 0 {
            let error = errno
            systemClose(fd)
            throw CacheStoreError.io(error, "cannot size \(path)")
        }
        return PartialPieceWriter(
            store: self, key: key, fileName: fileName, descriptor: fd, start: start, limit: completeLength - start,
            validator: validator
        )
    }

    /// Whether a piece of `validator` and `completeLength` goes into `record`'s file: only pieces
    /// with the same strong validator are combined (§3.4).
    private static func sharesPieces(_ record: PartialRecord, validator: String, completeLength: Int64) -> Bool {
        !validator.isEmpty && record.validator == validator && record.completeLength == completeLength
    }

    /// Records the bytes a piece wrote (already synced) to `fileName`, open on `source`, and
    /// combines the pieces into a complete entry when they cover the whole body. When the record
    /// names another file of the same validator and length (another piece was filed first), the
    /// bytes are copied there first. Blocking.
    func recordPiece(
        key: CacheKey, fileName: String, range: Range<Int64>, replacementFields: HeaderFields? = nil,
        validator: String, completeLength: Int64, source: Int32
    ) throws -> PartialPieceWriter.Outcome {
        guard !range.isEmpty else { return .kept(presentBytes: 0) }
        // The record written when the piece (and any piece begun before it) opened.
        writer.waitForQueuedWrites()
        let rules = options.rules
        let db = self.db
        let storageKey = key.storageKey
        // Copied outside the write transaction (it can be megabytes); the transaction below
        // records the range only if the record still names the file copied to.
        var target = fileName
        if let kept = try environment.read({ txn in
            try txn.withValue(forKey: storageKey, in: db.partials) { PartialRecord.decode($0) } ?? nil
        }), kept.file != fileName, Self.sharesPieces(kept, validator: validator, completeLength: completeLength) {
            try BodyFiles.copyRange(range, from: source, toFileAt: files.path(kept.file))
            target = kept.file
        }
        enum Step { case superseded, kept(Int64), whole(PartialRecord) }
        var freed: [String] = []
        let step = try environment.write { txn -> Step in
            // This piece's own file, once its bytes went to the filed one or when no record names
            // it (any more): no piece can join it.
            freed = target == fileName ? [] : [fileName]
            guard var record = try txn.withValue(forKey: storageKey, in: db.partials, { PartialRecord.decode($0) }) ?? nil,
                record.file == target
            else {
                freed = [fileName]
                return .superseded
            }
            let merged = record.validator.isEmpty ? [range] : PartialContent.merge(record.ranges, range)
            record.ranges = merged
            if let replacementFields, var response = record.storedResponse {
                var fields = replacementFields
                fields.remove(CacheRules.contentRangeField)
                fields.replaceOrAdd(name: .contentLength, value: String(record.completeLength))
                response.headerFields = StoredHeaders.filter(fields, shared: rules.isShared, keepsCookies: rules.storesSetCookie).fields
                record.response = Data(response.encodedRecord())
            }
            if merged == [0..<record.completeLength] {
                _ = try txn.delete(storageKey, in: db.partials)
                return .whole(record)
            }
            try txn.put(storageKey, try record.encoded(), in: db.partials)
            freed += try trimPartialBytes(txn, keeping: storageKey)
            return .kept(merged.reduce(Int64(0)) { $0 + Int64($1.count) })
        }
        for name in freed { files.remove(name) }
        switch step {
        case .superseded:
            return .superseded
        case .kept(let present):
            return .kept(presentBytes: present)
        case .whole(let record):
            return .combined(try combine(record, key: key))
        }
    }

    /// `.combined` with the complete entry stored under `key` for `validator` and
    /// `completeLength`, when there is one — after removing what is held in pieces of it (they
    /// can add nothing) —; nil when there is none, or for a piece without a validator. Blocking.
    func settledByWholeEntry(key: CacheKey, validator: String, completeLength: Int64) -> PartialPieceWriter.Outcome? {
        guard let id = wholeEntryID(key: key, validator: validator, completeLength: completeLength) else { return nil }
        if let kept = partialContent(for: key), kept.validator == validator { _ = try? removePartial(key: key) }
        return .combined(id)
    }

    /// The stored complete response of `key` with `validator` (its strong ETag, else
    /// Last-Modified) and a body of `completeLength` bytes, if any (no hit or miss counted).
    func wholeEntryID(key: CacheKey, validator: String, completeLength: Int64) -> CacheEntryID? {
        guard !validator.isEmpty, (try? checkOpen()) != nil else { return nil }
        let variants = (try? environment.read { txn in try storedVariants(of: key, in: txn) }) ?? []
        return variants.first {
            $0.response.status == 200 && $0.response.headerFields.contentLength == completeLength
                && CacheRules.combiningValidator(of: $0.response.headerFields) == validator
        }?.id
    }

    /// Stores the combined pieces as a complete entry (the file is moved into place).
    private func combine(_ record: PartialRecord, key: CacheKey) throws -> CacheEntryID {
        let path = files.path(record.file)
        defer { files.remove(record.file) }  // moved on success; left over on failure
        guard let response = record.storedResponse, let url = HTTPURL(string: response.url) else {
            throw CacheStoreError.io(EINVAL, "the partial record of \(key) does not decode")
        }
        return try store(
            key: key, request: HTTPRequestHead(method: .get, url: url), response: response.responseHead,
            bodyFile: path, requestTime: response.requestTime, responseTime: response.responseTime
        )
    }

    /// Removes what is held in pieces for `key`; returns whether anything was. Blocking.
    @discardableResult
    public func removePartial(key: CacheKey) throws -> Bool {
        try checkWritable()
        let db = self.db
        let storageKey = key.storageKey
        let file = try environment.write { txn -> String? in
            let record = try txn.withValue(forKey: storageKey, in: db.partials) { PartialRecord.decode($0) } ?? nil
            _ = try txn.delete(storageKey, in: db.partials)
            return record?.file
        }
        if let file { files.remove(file) }
        return file != nil
    }

    /// Deletes the partial record of `key` in `txn`; returns its file, to remove after commit.
    func dropPartialRecord(_ key: CacheKey, _ txn: WriteTransaction) throws -> String? {
        let storageKey = key.storageKey
        guard let record = try txn.withValue(forKey: storageKey, in: db.partials, { PartialRecord.decode($0) }) ?? nil else {
            return nil
        }
        _ = try txn.delete(storageKey, in: db.partials)
        return record.file
    }

    /// Keeps fewer than ``maximumPartials`` records, dropping the oldest; returns their files.
    private func trimPartials(_ txn: WriteTransaction) throws -> [String] {
        guard try txn.count(in: db.partials) >= Self.maximumPartials else { return [] }
        var oldest: (key: [UInt8], storedAt: Date, file: String)?
        try txn.withCursor(in: db.partials) { cursor in
            try cursor.forEach { entry in
                if let record = PartialRecord.decode(entry.value), let response = record.storedResponse,
                    oldest.map({ response.storedAt < $0.storedAt }) ?? true
                {
                    oldest = (Array(entry.key), response.storedAt, record.file)
                }
                return true
            }
        }
        guard let oldest else { return [] }
        _ = try txn.delete(oldest.key, in: db.partials)
        return [oldest.file]
    }

    /// Drops the oldest pieces, except those of `kept` (the piece just recorded), while all pieces'
    /// present bytes exceed ``partialBudget``; returns their files, to remove after commit.
    private func trimPartialBytes(_ txn: WriteTransaction, keeping kept: [UInt8]) throws -> [String] {
        var held: [(key: [UInt8], storedAt: Date, file: String, bytes: Int64)] = []
        var total: Int64 = 0
        try txn.withCursor(in: db.partials) { cursor in
            try cursor.forEach { entry in
                if let record = PartialRecord.decode(entry.value) {
                    let bytes = record.ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
                    total += bytes
                    let key = Array(entry.key)
                    if key != kept {
                        held.append((key, record.storedResponse?.storedAt ?? .distantPast, record.file, bytes))
                    }
                }
                return true
            }
        }
        guard total > partialBudget else { return [] }
        var freed: [String] = []
        for oldest in held.sorted(by: { $0.storedAt < $1.storedAt }) where total > partialBudget {
            _ = try txn.delete(oldest.key, in: db.partials)
            freed.append(oldest.file)
            total -= oldest.bytes
        }
        return freed
    }

    /// The file names the partial records point at (the open-time sweep keeps these).
    static func partialFileNames(environment: Environment, partials: Database) -> Set<String> {
        var names: Set<String> = []
        try? environment.read { txn in
            try txn.withCursor(in: partials) { cursor in
                try cursor.forEach { entry in
                    if let record = PartialRecord.decode(entry.value) { names.insert(record.file) }
                    return true
                }
            }
        }
        return names
    }
}
